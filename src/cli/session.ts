// What one invocation talks to and as whom: each setting from its flag, else its PLINTH_* variable,
// else the current context (docs/cli.md#precedence).

import { createPlinth, type Plinth } from '@plinth/sdk';
import { ConfigStore, DEFAULT_CONTEXT, type Context } from './config.ts';
import { CliExit, EXIT, UsageError } from './exit-codes.ts';
import { Output, parseFormat } from './output.ts';

export const DEFAULT_HOST = 'http://127.0.0.1:8080';

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
  token?: string;
  organization?: string;
  project?: string;
}

export function normaliseHost(host: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(host) ? host : `http://${host}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`--host must be a URL such as ${DEFAULT_HOST}, not "${host}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--host must be an http or https URL, not "${host}"`);
  return url.toString().replace(/\/+$/, '');
}

/** resolveSettings applies the precedence flag > PLINTH_* environment > context. */
export function resolveSettings(options: GlobalOptions, store: ConfigStore, env: NodeJS.ProcessEnv = process.env, allowNewContext = false): Settings {
  const config = store.read();
  const contextName = options.context ?? env.PLINTH_CONTEXT ?? config.current ?? DEFAULT_CONTEXT;
  // A misspelt --context would otherwise act with no credential and no host of its own; login creates one.
  if (options.context !== undefined && !allowNewContext && !config.contexts[contextName]) throw new UsageError(`no context named "${contextName}" (plinth context list)`);
  const context = config.contexts[contextName] ?? {};
  return {
    contextName,
    context,
    host: normaliseHost(options.host ?? env.PLINTH_HOST ?? context.host ?? DEFAULT_HOST),
    token: env.PLINTH_TOKEN || store.token(contextName),
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
  constructor(readonly flags: GlobalOptions, env: NodeJS.ProcessEnv = process.env, allowNewContext = false) {
    const options = flags;
    this.store = new ConfigStore();
    this.out = new Output(parseFormat(options.output ?? env.PLINTH_OUTPUT ?? 'table'));
    this.settings = resolveSettings(options, this.store, env, allowNewContext);
  }

  /** The API client, with the credential; no credential at all is exit 3 before any request. */
  get plinth(): Plinth {
    if (!this.settings.token) throw new CliExit(EXIT.AUTH, `not logged in to ${this.settings.host}: run plinth login`);
    this.client ??= createPlinth({
      baseUrl: this.settings.host,
      token: this.settings.token,
      organizationId: this.settings.organization,
      userAgent: `plinth-cli/${CLI_VERSION}`,
    });
    return this.client;
  }

  /** The project to act in: the flag, PLINTH_PROJECT or the context's; none is a usage error. */
  requireProject(): string {
    if (!this.settings.project) throw new UsageError('no project: pass --project <id>, set PLINTH_PROJECT, or plinth context set --project <id>');
    return this.settings.project;
  }
}
