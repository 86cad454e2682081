import type { Principal } from '../platform/auth/principal.ts';
import type { Config } from '../platform/config.ts';
import { isEmptyPatch, isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { findUsages, inUseError } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { encodeCursor, pageRequest, serialCursorKey, toPage, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findAppInstallation, findGitServer } from '../git-servers/git-servers.repo.ts';
import {
  deleteCodeSourceById,
  findCodeSource,
  findCodeSourcesPage,
  insertCodeSource,
  updateCodeSourceRow,
  type CodeSourceRow,
  type CodeSourceValues,
} from './code-sources.repo.ts';
import type { CodeSource, CreateCodeSource, UpdateCodeSource } from './code-sources.schema.ts';
import { gitCredential, tokenContext, webhookSecretContext } from './credentials.ts';
import { listRemoteBranches } from './remote-branches.ts';
import type { NamedFilter, PaginationQuery } from '../platform/schema.ts';

export function codeSourceToApi(config: Config, row: CodeSourceRow): CodeSource {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    url: row.url,
    provider: row.provider,
    authType: row.auth_type,
    hasToken: row.token_sealed !== null,
    hasWebhookSecret: row.webhook_secret_sealed !== null,
    webhookUrl: `${config.publicUrl.replace(/\/+$/, '')}/webhooks/git/${row.id}`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.given_id ? { givenId: row.given_id } : {}),
    ...(row.git_app_installation_id ? { gitAppInstallationId: row.git_app_installation_id } : {}),
    ...(row.git_self_hosted_server_id ? { gitSelfHostedServerId: row.git_self_hosted_server_id } : {}),
  };
}

/** A URL with a user name or password in it would show a secret in every response and log line. */
function assertCleanUrl(url: string) {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RuleViolationError('CodeSource', 'INVALID_URL', 'url is not a URL', ['/data/url: not a URL']);
  }
  if (parsed.username || parsed.password) {
    throw new RuleViolationError('CodeSource', 'CREDENTIAL_IN_URL', 'url must not carry credentials: give them as token', [
      '/data/url: has a user name or password',
    ]);
  }
}

/**
 * The authentication settings must agree: TOKEN has a token, APP_INSTALLATION an installation of the
 * organization, OAUTH a self-hosted server of the organization (404 for another organization's), and
 * nothing is set that the type does not use. The referenced rows are share-locked against a delete.
 */
async function assertAuth(db: Executor, organizationId: string, v: CodeSourceValues) {
  const problems: string[] = [];
  const needs = { TOKEN: 'token_sealed', APP_INSTALLATION: 'git_app_installation_id', OAUTH: 'git_self_hosted_server_id' } as const;
  const labels = { token_sealed: 'token', git_app_installation_id: 'gitAppInstallationId', git_self_hosted_server_id: 'gitSelfHostedServerId' } as const;
  for (const [type, column] of Object.entries(needs)) {
    if (v.auth_type === type && v[column] === null) problems.push(`/data/${labels[column]}: required when authType is ${type}`);
    if (v.auth_type !== type && v[column] !== null) problems.push(`/data/${labels[column]}: only used when authType is ${type}`);
  }
  if (problems.length) throw new RuleViolationError('CodeSource', 'INVALID_AUTH', 'The authentication settings do not agree with authType', problems);
  if (v.git_app_installation_id && !(await findAppInstallation(db, organizationId, v.git_app_installation_id, 'share'))) {
    throw new NotFoundError('GitAppInstallation', v.git_app_installation_id);
  }
  if (v.git_self_hosted_server_id && !(await findGitServer(db, organizationId, v.git_self_hosted_server_id, 'share'))) {
    throw new NotFoundError('GitSelfHostedServer', v.git_self_hosted_server_id);
  }
}

const duplicate = (givenId: string | null) => () => new ConflictError('CodeSource', 'ALREADY_EXISTS', `A code source with givenId ${givenId} already exists`);

export async function createCodeSource(db: Db, secrets: SecretBox, config: Config, principal: Principal, input: CreateCodeSource) {
  assertCleanUrl(input.url);
  const id = newId();
  const values: CodeSourceValues = {
    name: input.name,
    given_id: input.givenId ?? null,
    url: input.url,
    provider: input.provider ?? 'GENERIC',
    auth_type: input.authType ?? 'NONE',
    token_sealed: input.token === undefined ? null : secrets.seal(input.token, tokenContext(id)),
    git_app_installation_id: input.gitAppInstallationId ?? null,
    git_self_hosted_server_id: input.gitSelfHostedServerId ?? null,
    webhook_secret_sealed: input.webhookSecret === undefined ? null : secrets.seal(input.webhookSecret, webhookSecretContext(id)),
  };
  const row = await db.transaction().execute(async (trx) => {
    await assertAuth(trx, principal.organizationId, values);
    return rethrowAs(insertCodeSource(trx, id, principal.organizationId, values), isUniqueViolation, duplicate(values.given_id));
  });
  return codeSourceToApi(config, row);
}

export async function getCodeSourceRow(db: Executor, principal: Principal, id: string, lock: 'update' | 'share' | 'none' = 'none') {
  const row = await findCodeSource(db, principal.organizationId, id, lock);
  if (!row) throw new NotFoundError('CodeSource', id);
  return row;
}

/** assertCodeSourceUsable: a stack may point only at a code source of its organization (404 otherwise), held against a delete. */
export async function assertCodeSourceUsable(db: Executor, principal: Principal, id: string): Promise<void> {
  await getCodeSourceRow(db, principal, id, 'share');
}

export async function getCodeSource(db: Db, config: Config, principal: Principal, id: string) {
  return codeSourceToApi(config, await getCodeSourceRow(db, principal, id));
}

export async function listCodeSources(db: Db, config: Config, principal: Principal, filter: NamedFilter, page: PageRequest) {
  const { items, meta } = toPage(await findCodeSourcesPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map((r) => codeSourceToApi(config, r)), meta };
}

export async function updateCodeSource(db: Db, secrets: SecretBox, config: Config, principal: Principal, id: string, c: UpdateCodeSource) {
  return db.transaction().execute(async (trx) => {
    const current = await getCodeSourceRow(trx, principal, id, 'update');
    if (isEmptyPatch(c)) return codeSourceToApi(config, current);
    if (c.url !== undefined) assertCleanUrl(c.url);
    const seal = (value: string | null | undefined, context: string) =>
      value === undefined ? undefined : value === null ? null : secrets.seal(value, context);
    const changes: Partial<CodeSourceValues> = {
      name: c.name,
      url: c.url,
      provider: c.provider,
      auth_type: c.authType,
      token_sealed: seal(c.token, tokenContext(id)),
      git_app_installation_id: c.gitAppInstallationId,
      git_self_hosted_server_id: c.gitSelfHostedServerId,
      webhook_secret_sealed: seal(c.webhookSecret, webhookSecretContext(id)),
    };
    const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) as Partial<CodeSourceValues>;
    await assertAuth(trx, principal.organizationId, { ...current, ...defined });
    return codeSourceToApi(config, await updateCodeSourceRow(trx, id, defined));
  });
}

/** deleteCodeSource refuses (409, naming them) while stacks point at the source; the lock orders it against a stack taking it. */
export async function deleteCodeSource(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await getCodeSourceRow(trx, principal, id, 'update');
    const usages = await findUsages(trx, 'CodeSource', id);
    if (usages.length > 0) throw inUseError('CodeSource', `Code source ${row.given_id ?? row.name}`, usages);
    await deleteCodeSourceById(trx, id);
  });
}

/** The branches one answer holds when no page is asked for: all of any repository people work in. */
const ALL_BRANCHES = 10_000;

/**
 * listBranches (`GET /code-source/{id}/branches`) asks the repository for its branches over the smart-HTTP
 * protocol (bounded by PLINTH_GIT_TIMEOUT_MS) and answers them all in name order (up to ALL_BRANCHES),
 * or, when asked for a page, that page of them; the cursor is a position in that list.
 */
export async function listBranches(db: Db, secrets: SecretBox, config: Config, principal: Principal, id: string, query: PaginationQuery) {
  const row = await getCodeSourceRow(db, principal, id);
  const credential = await gitCredential(db, secrets, config.git, row);
  const branches = await listRemoteBranches(row.url, credential, config.git.remoteTimeoutMs, config.git.outbound);
  const paged = (query.cursor !== undefined && query.cursor !== null) || (query.limit !== undefined && query.limit !== null);
  const { limit, after } = paged ? pageRequest(query) : { limit: ALL_BRANCHES, after: undefined };
  const start = Number(serialCursorKey(after) ?? 0);
  const items = branches.slice(start, start + limit);
  const next = start + limit < branches.length ? encodeCursor(String(start + limit)) : undefined;
  return { items, meta: { limit, totalCount: branches.length, ...(next ? { nextCursor: next } : {}) } };
}
