// What one invocation talks to and as whom: each setting from its flag, else its PLINTH_* variable,
// else the current context (docs/cli.md#precedence).

import { createPlinth, type Plinth, type PlinthOptions } from '@plinth/sdk';
import { httpFetch } from './http-fetch.ts';
import { ConfigStore, DEFAULT_CONTEXT, type Context, type SavedKey } from './config.ts';
import { CliExit, EXIT, UsageError } from './exit-codes.ts';
import { DEFAULT_HOST, hostOrigin, normaliseHost, warnIfCleartext } from './host.ts';
import { NameBook } from './names.ts';
import { Output, parseFormat } from './output.ts';
import { KINDS, looksLikeId, resolveOrganization, resolveRef, type KindName } from './resolve.ts';

/** The options every command takes (commander's optsWithGlobals()). */
export interface GlobalOptions {
  host?: string;
  org?: string;
  project?: string;
  context?: string;
  output?: string;
}

export interface Settings {
  contextName: string;
  context: Context;
  host: string;
  /** PLINTH_TOKEN: a key given for this invocation, sent to whatever host it names. */
  envToken?: string;
  /** The context's saved key: sent only to the origin it was saved for. */
  savedKey?: SavedKey;
  organization?: string;
  project?: string;
}

/** cliClient is the SDK client of every command: the CLI's user agent, and its transport (http-fetch.ts). */
export function cliClient(options: Pick<PlinthOptions, 'baseUrl' | 'token' | 'organizationId'>): Plinth {
  return createPlinth({ ...options, userAgent: `plinth-cli/${CLI_VERSION}`, fetch: httpFetch });
}

/** resolveSettings applies the precedence flag > PLINTH_* environment > context. */
export function resolveSettings(options: GlobalOptions, store: ConfigStore, env: NodeJS.ProcessEnv = process.env, allowNewContext = false): Settings {
  const config = store.read();
  const contextName = options.context ?? env.PLINTH_CONTEXT ?? config.current ?? DEFAULT_CONTEXT;
  // A misspelt --context would otherwise act with no credential and no host of its own; login creates one.
  if (options.context !== undefined && !allowNewContext && !config.contexts[contextName])
    throw new UsageError(`no context named "${contextName}" (plinth context list)`);
  const context = config.contexts[contextName] ?? {};
  return {
    contextName,
    context,
    host: normaliseHost(options.host ?? env.PLINTH_HOST ?? context.host ?? DEFAULT_HOST),
    envToken: env.PLINTH_TOKEN || undefined,
    savedKey: store.key(contextName),
    organization: options.org ?? env.PLINTH_ORG ?? context.organization,
    project: options.project ?? env.PLINTH_PROJECT ?? context.project,
  };
}

export const CLI_VERSION = '0.0.0';

/** The parts of one invocation a command uses. */
export class Session {
  readonly store: ConfigStore;
  readonly out: Output;
  readonly settings: Settings;
  private client?: Plinth;

  /** `flags`: the options as given on the command line, before the environment and context fill in. */
  constructor(
    readonly flags: GlobalOptions,
    env: NodeJS.ProcessEnv = process.env,
    allowNewContext = false,
  ) {
    const options = flags;
    this.store = new ConfigStore();
    this.out = new Output(parseFormat(options.output ?? env.PLINTH_OUTPUT ?? 'table'));
    this.settings = resolveSettings(options, this.store, env, allowNewContext);
  }

  /** warnIfCleartext warns (once, on stderr) when the API is plain http on another machine: see host.ts. */
  warnIfCleartext(): Promise<void> {
    return warnIfCleartext(this.settings.host, (line) => this.out.info(line));
  }

  /**
   * The API client, with the credential. No credential at all is exit 3, a saved key for another host
   * exit 9, both before any request is sent.
   */
  get plinth(): Plinth {
    const token = this.token();
    this.client ??= cliClient({ baseUrl: this.settings.host, token, organizationId: this.settings.organization });
    return this.client;
  }

  /**
   * token is the key to send: PLINTH_TOKEN as given, else the context's saved key, and that only to
   * the origin it was saved for. A --host or PLINTH_HOST that names another server would otherwise
   * hand it the key.
   */
  private token(): string {
    const { envToken, savedKey, host, contextName } = this.settings;
    if (envToken) return envToken;
    if (!savedKey) throw new CliExit(EXIT.AUTH, `not logged in to ${host}: run plinth login --host ${host}`);
    if (savedKey.host === hostOrigin(host)) return savedKey.token;
    const savedFor = savedKey.host === null ? 'no host (it was saved by an older plinth without one)' : savedKey.host;
    throw new CliExit(
      EXIT.KEY_FOR_OTHER_HOST,
      `the key of context "${contextName}" was saved for ${savedFor}, not ${hostOrigin(host)}, and is sent nowhere else: ` +
        `log in to ${host} (plinth login --host ${host}, or add --context <name> to keep this context's key)`,
    );
  }

  /**
   * resolveOrganization turns an organization given by name (`--org acme`) into its id before the
   * first request, so that X-Organization-Id always carries an id.
   */
  async resolveOrganization(): Promise<void> {
    const org = this.settings.organization;
    if (org === undefined || looksLikeId(org)) return;
    // The caller's organizations are listed without X-Organization-Id: the name is not an id to send.
    this.settings.organization = undefined;
    this.client = undefined;
    this.settings.organization = await resolveOrganization(this.plinth, org);
    this.client = undefined;
  }

  private resolvedProject?: Promise<string | undefined>;
  private nameBook?: NameBook;

  /** The labels tables show for the ids records point at. */
  get names(): NameBook {
    this.nameBook ??= new NameBook(this.plinth);
    return this.nameBook;
  }

  /** The id of the project to act in (the flag, PLINTH_PROJECT or the context's, which may be a givenId or name), if any. */
  project(): Promise<string | undefined> {
    // An empty PLINTH_PROJECT or flag means none, as an unset one does.
    const ref = this.settings.project || undefined;
    this.resolvedProject ??= ref === undefined ? Promise.resolve(undefined) : resolveRef(this.plinth, 'project', ref);
    return this.resolvedProject;
  }

  /** The project to act in; none is a usage error. */
  async requireProject(): Promise<string> {
    const project = await this.project();
    if (!project) throw new UsageError('no project: pass --project <id|givenId|name>, set PLINTH_PROJECT, or plinth context set --project <…>');
    return project;
  }

  /**
   * The id of the record `ref` names (an id, a givenId or a name), looked up in the current project where
   * that applies, or in `environmentId` (a module instance, when the command names an environment).
   */
  async resolve(kind: KindName, ref: string, environmentId?: string): Promise<string> {
    if (looksLikeId(ref)) return ref;
    const projectId = KINDS[kind].inProject ? await this.project() : undefined;
    return resolveRef(this.plinth, kind, ref, { projectId, environmentId });
  }
}
