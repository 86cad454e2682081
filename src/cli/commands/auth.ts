// login, logout, whoami and context: who the CLI is, and where it points.

import type { Command } from 'commander';
import { unwrap, type Principal } from '@plinth/sdk';
import { action, localAction } from '../command-kit.ts';
import { CliExit, EXIT, UsageError } from '../exit-codes.ts';
import { hostOrigin, normaliseHost, warnIfCleartext } from '../host.ts';
import { readSecret } from '../prompt.ts';
import { resolveOrganization } from '../resolve.ts';
import { cliClient, type Session } from '../session.ts';

const principalColumns = (p: Principal) => p;

async function whoamiWith(host: string, token: string, organization?: string): Promise<Principal> {
  const client = (organizationId?: string) => cliClient({ baseUrl: host, token, organizationId });
  const organizationId = organization === undefined ? undefined : await resolveOrganization(client(), organization);
  return (await unwrap(client(organizationId).api.GET('/auth/whoami'))).data;
}

/**
 * How long login waits for a server that refuses connections: one started a moment ago
 * (`npm start & plinth login`) listens once its database is up and migrated, which on a first start
 * (creating the embedded PostgreSQL) takes some seconds.
 */
const WAIT_FOR_SERVER_MS = 30_000;
const WAIT_STEP_MS = 250;

function isRefused(error: unknown): boolean {
  return error instanceof TypeError && (error.cause as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';
}

/** whoamiWith, retried while nothing listens at the host yet (said once on stderr). */
async function whoamiOnceUp(session: Session, host: string, token: string, organization?: string): Promise<Principal> {
  await warnIfCleartext(host, (line) => session.out.info(line));
  const deadline = Date.now() + WAIT_FOR_SERVER_MS;
  let told = false;
  for (;;) {
    try {
      return await whoamiWith(host, token, organization);
    } catch (error) {
      if (!isRefused(error) || Date.now() + WAIT_STEP_MS > deadline) throw error;
      if (!told) session.out.info(`waiting for ${host} to answer`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    }
  }
}

async function readToken(withToken: boolean): Promise<string> {
  let token: string;
  if (withToken) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    token = Buffer.concat(chunks).toString('utf8').trim();
  } else if (process.stdin.isTTY) {
    token = (await readSecret('API key (plk_…): ')).trim();
  } else {
    throw new UsageError('standard input is not a terminal: pass --with-token and the API key on standard input');
  }
  if (!token) throw new UsageError('no API key was given');
  return token;
}

export function authCommands(program: Command) {
  program
    .command('login')
    .description('store an API key for the current context, bound to its host (checked against the server first)')
    .option('--with-token', 'read the API key from standard input')
    .action(
      localAction(async (session: Session, options: { withToken?: boolean }) => {
        const { host, contextName, organization } = session.settings;
        const token = await readToken(Boolean(options.withToken));
        const principal = await whoamiOnceUp(session, host, token, organization);
        session.store.updateContext(contextName, { host, organization: principal.organizationId }, true);
        session.store.setKey(contextName, { host: hostOrigin(host), token });
        session.out.info(`logged in to ${host} as ${principal.email} (${principal.role} of ${principal.organizationName}), context "${contextName}"`);
        session.out.item(principalColumns(principal));
      }),
    );

  program
    .command('logout')
    .description("forget the current context's API key (the key itself stays valid until revoked)")
    .action(
      localAction((session: Session) => {
        const { contextName, host } = session.settings;
        const had = session.store.key(contextName) !== undefined;
        session.store.setKey(contextName, undefined);
        session.out.info(had ? `logged out of ${host} (context "${contextName}")` : `context "${contextName}" had no stored key`);
        session.out.item({ context: contextName, host, loggedOut: had });
      }),
    );

  program
    .command('whoami')
    .description('the principal the API key acts as, its organization and role')
    .action(
      action(async (session: Session) => {
        session.out.item((await unwrap(session.plinth.api.GET('/auth/whoami'))).data);
      }),
    );
}

/** The subcommands of `plinth context`. */
export function contextCommands(context: Command) {
  context
    .command('list')
    .description('every context, the current one marked')
    .action(
      localAction((session: Session) => {
        const config = session.store.read();
        const rows = Object.entries(config.contexts).map(([name, c]) => {
          const key = session.store.key(name);
          return { name, current: name === config.current, ...c, loggedIn: key !== undefined, keyHost: key?.host ?? undefined };
        });
        session.out.list(rows, [
          ['CURRENT', (r) => (r.current ? '*' : '')],
          ['NAME', (r) => r.name],
          ['HOST', (r) => r.host],
          ['ORGANIZATION', (r) => r.organization],
          ['PROJECT', (r) => r.project],
          ['KEY FOR', (r) => (r.loggedIn ? (r.keyHost ?? '(no host: log in again)') : '')],
        ]);
      }),
    );

  context
    .command('use <name>')
    .description('make a context the current one')
    .action(
      localAction((session: Session, name: string) => {
        const config = session.store.read();
        if (!config.contexts[name]) throw new CliExit(EXIT.NOT_FOUND, `no context named "${name}" (plinth context list)`);
        session.store.write({ ...config, current: name });
        session.out.info(`switched to context "${name}"`);
        session.out.item({ name, ...config.contexts[name] });
      }),
    );

  context
    .command('set [name]')
    .description('create or change a context from --host, --org and --project (default: the current context)')
    .action(
      localAction((session: Session, name: string | undefined) => {
        const flags = session.flags;
        const target = name ?? session.settings.contextName;
        const updated = session.store.updateContext(target, {
          host: flags.host === undefined ? undefined : normaliseHost(flags.host),
          organization: flags.org,
          project: flags.project,
        });
        const key = session.store.key(target);
        if (key && updated.host !== undefined && key.host !== hostOrigin(updated.host)) {
          session.out.info(`the key of context "${target}" stays bound to ${key.host ?? 'no host'}: to use ${updated.host}, plinth login --context ${target}`);
        }
        session.out.item({ name: target, ...updated });
      }),
    );

  context
    .command('show')
    .description('what this invocation would use: each setting after flags, PLINTH_* variables and the context')
    .action(
      localAction((session: Session) => {
        const s = session.settings;
        const tokenSource = s.envToken ? 'PLINTH_TOKEN' : s.savedKey ? session.store.credentialsFile : 'none';
        const keyHost = s.envToken ? undefined : (s.savedKey?.host ?? undefined);
        session.out.item({ context: s.contextName, host: s.host, organization: s.organization, project: s.project, token: tokenSource, keyHost });
      }),
    );
}
