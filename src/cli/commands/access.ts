// key and code-source: API keys (list, create, get, delete) and the Git repositories stacks read their
// code from (list, get, delete).

import type { Command } from 'commander';
import { unwrap, type components } from '@plinth/sdk';
import { action, examples } from '../command-kit.ts';
import { confirmByName } from '../confirm.ts';
import { deleteAction } from '../deletion.ts';
import { CliExit, EXIT } from '../exit-codes.ts';
import { printList, readList, withListOptions, type ListFlags } from '../listing.ts';
import type { Column } from '../output.ts';
import { looksLikeId } from '../resolve.ts';
import type { Session } from '../session.ts';

type ApiKey = components['schemas']['ApiKey'];
type CodeSource = components['schemas']['CodeSource'];

const keyColumns: Column<ApiKey>[] = [
  ['NAME', (k) => k.name],
  ['PREFIX', (k) => k.tokenPrefix],
  ['CREATED', (k) => k.createdAt],
  ['EXPIRES', (k) => k.expiresAt],
  ['REVOKED', (k) => k.revokedAt],
  ['ID', (k) => k.id, 'wide'],
  ['SERVICE ACCOUNT', (k) => k.serviceAccountId, 'wide'],
];
const sourceColumns: Column<CodeSource>[] = [
  ['GIVEN ID', (c) => c.givenId],
  ['NAME', (c) => c.name],
  ['URL', (c) => c.url],
  ['AUTH', (c) => c.authType],
  ['ID', (c) => c.id, 'wide'],
];

/** A key by id, or by name among the keys the caller can see (keys are few; names need not be unique). */
async function resolveKey(s: Session, ref: string): Promise<ApiKey> {
  if (looksLikeId(ref)) return (await unwrap(s.plinth.api.GET('/api-keys/{id}', { params: { path: { id: ref } } }))).data;
  const matches = (await readList(s.plinth, '/api-keys', {}, { all: true })).items.filter((k) => k.name === ref && !k.revokedAt);
  if (matches.length === 1) return matches[0];
  if (matches.length === 0) throw new CliExit(EXIT.NOT_FOUND, `no unrevoked API key with the id or name "${ref}" (plinth key list)`);
  throw new CliExit(EXIT.USAGE, `"${ref}" names ${matches.length} API keys: give one's id${matches.map((k) => `\n  ${k.id}  ${k.tokenPrefix}…`).join('')}`);
}

/** The subcommands of `plinth key`. */
export function keyCommands(key: Command) {
  examples(
    withListOptions(key.command('list').description('API keys, newest first')).option('--service-account <id>', "only this service account's"),
    'plinth key list',
  ).action(
    action(async (s: Session, o: ListFlags & { serviceAccount?: string }) => {
      const query = o.serviceAccount ? { serviceAccountId: o.serviceAccount } : {};
      printList(s, await readList(s.plinth, '/api-keys', { query }, o), keyColumns);
    }),
  );
  examples(key.command('get <key>').description('an API key (never its token), by id or name'), 'plinth key get ci').action(
    action(async (s: Session, ref: string) => s.out.item(await resolveKey(s, ref))),
  );
  examples(
    key
      .command('create')
      .description('a new API key for the caller (or --service-account); the token is shown once, on stdout')
      .requiredOption('--name <name>')
      .option('--service-account <id>', 'issue it to this service account')
      .option('--expires-at <time>', 'an RFC 3339 time after which it stops working'),
    'plinth key create --name ci --expires-at 2027-06-30T00:00:00Z',
  ).action(
    action(async (s: Session, o: { name: string; serviceAccount?: string; expiresAt?: string }) => {
      const data = { name: o.name, ...(o.serviceAccount ? { serviceAccountId: o.serviceAccount } : {}), ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}) };
      const created = (await unwrap(s.plinth.api.POST('/api-keys', { body: { data } }))).data;
      s.out.info('the token is shown this once: store it now');
      s.out.item(created);
    }),
  );
  examples(
    key
      .command('delete <key>')
      .alias('revoke')
      .description('revoke an API key: it fails on its next request (asks for its name to be typed back)')
      .option('-y, --yes', 'do not ask'),
    'plinth key delete ci',
  ).action(
    action(async (s: Session, ref: string, o: { yes?: boolean }) => {
      const found = await resolveKey(s, ref);
      await confirmByName(`API key "${found.name}" (${found.tokenPrefix}…)`, found.name, o.yes);
      await unwrap(s.plinth.api.DELETE('/api-keys/{id}', { params: { path: { id: found.id } } }));
      s.out.info(`revoked API key "${found.name}" (${found.id})`);
    }),
  );
}

/** The subcommands of `plinth code-source`. */
export function codeSourceCommands(source: Command) {
  examples(
    withListOptions(source.command('list').description('code sources, newest first'))
      .option('--name <name>', 'only those with exactly this name')
      .option('--given-id <givenId>', 'only the one with this givenId'),
    'plinth code-source list',
  ).action(
    action(async (s: Session, o: ListFlags & { name?: string; givenId?: string }) => {
      const query = { ...(o.name !== undefined ? { name: o.name } : {}), ...(o.givenId !== undefined ? { givenId: o.givenId } : {}) };
      printList(s, await readList(s.plinth, '/code-sources', { query }, o), sourceColumns);
    }),
  );
  examples(source.command('get <source>').description('a code source, by id, givenId or name (never its token)'), 'plinth code-source get infra').action(
    action(async (s: Session, ref: string) => {
      const id = await s.resolve('codeSource', ref);
      s.out.item((await unwrap(s.plinth.api.GET('/code-sources/{id}', { params: { path: { id } } }))).data);
    }),
  );
  examples(
    source.command('delete <source>').description('delete a code source no stack uses (asks for its name to be typed back)').option('-y, --yes', 'do not ask'),
    'plinth code-source delete infra',
  ).action(
    deleteAction({
      noun: 'code source',
      kind: 'codeSource',
      label: async (s, id) => (await unwrap(s.plinth.api.GET('/code-sources/{id}', { params: { path: { id } } }))).data.name,
      remove: (s, id) => unwrap(s.plinth.api.DELETE('/code-sources/{id}', { params: { path: { id } } })),
    }),
  );
}
