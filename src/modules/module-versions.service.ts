import { createHash } from 'node:crypto';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { checkInputProperties } from '../inputs/check-property.ts';
import type { InputProperty } from '../inputs/inputs.schema.ts';
import { formatProblems } from '../inputs/validate-value.ts';
import { getCodeSourceRow } from '../code-sources/code-sources.service.ts';
import type { CodeSourceRow } from '../code-sources/code-sources.repo.ts';
import { lockVisibleDefinition, setLatestVersion } from './module-definitions.repo.ts';
import { assertMayChange, getDefinitionRow } from './module-definitions.service.ts';
import { deprecateVersion, findVersionHistory, findVersionsPage, findVisibleVersion, insertVersion, moduleVersionRowToApi } from './module-versions.repo.ts';
import type { DeprecateModuleVersion, ModuleOutput, ModuleVersionListQuery, PublishModuleVersion } from './module-versions.schema.ts';
import { compareSemVer, parseSemVer } from './semver.ts';

const ENTITY = 'ModuleVersion';

/** What a publish needs from Git: the commit a ref names and the archive of a directory at it (code-sources/git-snapshot.ts). */
export type SnapshotSource = (source: CodeSourceRow, ref: string, path: string) => Promise<{ commitSha: string; archive: Buffer }>;

function outputProblems(outputs: ModuleOutput[]): string[] {
  const seen = new Set<string>();
  return outputs.flatMap((o, i) => {
    if (!seen.has(o.name)) {
      seen.add(o.name);
      return [];
    }
    return [`/data/outputs/${i}/name: duplicate output name ${JSON.stringify(o.name)}`];
  });
}

/** moved_from of a top-level input may only name top-level inputs of versions published before. */
function movedFromProblems(inputs: InputProperty[], history: { inputs: unknown }[]): string[] {
  const earlier = new Set(history.flatMap((h) => (h.inputs as InputProperty[]).map((i) => i.id)));
  return inputs.flatMap((input, i) =>
    (input.moved_from ?? []).flatMap((id, j) =>
      earlier.has(id) ? [] : [`/data/inputs/${i}/moved_from/${j}: ${JSON.stringify(id)} is not an input of an earlier version`],
    ),
  );
}

/** The shape rules a schema cannot say: a semantic version, sound inputs, unique outputs, moved_from naming earlier inputs. */
function checkPublish(input: PublishModuleVersion, history: { version: string; inputs: unknown }[]) {
  const version = parseSemVer(input.version);
  if (!version) {
    throw new RuleViolationError(ENTITY, 'INVALID_VERSION', `"${input.version}" is not a semantic version (MAJOR.MINOR.PATCH, such as 1.4.0)`, [
      '/data/version: is not a semantic version',
    ]);
  }
  const problems = [
    ...formatProblems(checkInputProperties(input.inputs), '/data/inputs'),
    ...outputProblems(input.outputs ?? []),
    ...movedFromProblems(input.inputs, history),
  ];
  if (problems.length > 0) throw new RuleViolationError(ENTITY, 'INVALID', 'The module version is not valid', problems);
  if (history.some((h) => h.version === input.version)) {
    throw new ConflictError(ENTITY, 'ALREADY_EXISTS', `Version ${input.version} is already published`);
  }
  const latest = history.at(-1);
  if (latest && compareSemVer(version, parseSemVer(latest.version)!) <= 0) {
    throw new RuleViolationError(ENTITY, 'NOT_NEWER', `Version ${input.version} is not newer than the latest, ${latest.version}`, [], {
      latestVersion: latest.version,
    });
  }
}

/**
 * publishModuleVersion checks the version, pins the source's ref to its commit and archives the module's
 * directory there (which proves both exist), then records it as the definition's latest. The Git work
 * happens outside any transaction; the checks are repeated under the definition's lock, so two
 * publishes at once cannot both pass.
 */
export async function publishModuleVersion(db: Db, snapshot: SnapshotSource, principal: Principal, input: PublishModuleVersion) {
  const definition = await getDefinitionRow(db, principal, input.moduleDefinitionId);
  assertMayChange(principal, definition);
  checkPublish(input, await findVersionHistory(db, definition.id));
  const source = await getCodeSourceRow(db, principal, input.source.codeSourceId);
  const path = input.source.path ?? '';
  const { commitSha, archive } = await snapshot(source, input.source.ref, path);
  return db.transaction().execute(async (trx) => {
    const locked = await lockVisibleDefinition(trx, principal.organizationId, definition.id);
    if (!locked) throw new NotFoundError('ModuleDefinition', definition.id);
    await getCodeSourceRow(trx, principal, source.id, 'share');
    checkPublish(input, await findVersionHistory(trx, definition.id));
    const id = newId();
    try {
      const row = await insertVersion(trx, {
        id,
        definitionId: definition.id,
        organizationId: definition.organization_id,
        version: input.version,
        codeSourceId: source.id,
        ref: input.source.ref,
        commitSha,
        path,
        inputs: input.inputs,
        outputs: input.outputs ?? [],
        changelog: input.changelog ?? '',
        archive,
        archiveSha256: createHash('sha256').update(archive).digest('hex'),
        publishedById: principal.userId,
      });
      await setLatestVersion(trx, definition.id, id, input.version);
      return moduleVersionRowToApi(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(ENTITY, 'ALREADY_EXISTS', `Version ${input.version} is already published`);
      throw error;
    }
  });
}

export async function getModuleVersionRow(db: Db, principal: Principal, id: string) {
  const row = await findVisibleVersion(db, principal.organizationId, id);
  if (!row) throw new NotFoundError(ENTITY, id);
  return row;
}

export async function getModuleVersion(db: Db, principal: Principal, id: string) {
  return moduleVersionRowToApi(await getModuleVersionRow(db, principal, id));
}

export async function listModuleVersions(db: Db, principal: Principal, query: ModuleVersionListQuery, page: PageRequest) {
  const rows = await findVersionsPage(db, principal.organizationId, query, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map(moduleVersionRowToApi), meta };
}

/** deprecateModuleVersion marks a version as not to be used for new instances or upgrades; existing instances keep it. */
export async function deprecateModuleVersion(db: Db, principal: Principal, id: string, input: DeprecateModuleVersion) {
  return db.transaction().execute(async (trx) => {
    const version = await findVisibleVersion(trx, principal.organizationId, id);
    if (!version) throw new NotFoundError(ENTITY, id);
    const definition = await lockVisibleDefinition(trx, principal.organizationId, version.module_definition_id);
    if (!definition) throw new NotFoundError(ENTITY, id);
    assertMayChange(principal, definition);
    return moduleVersionRowToApi(await deprecateVersion(trx, id, input.message ?? null));
  });
}
