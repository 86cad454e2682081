import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Trx } from '../platform/db/db.ts';
import { ConflictError, NotFoundError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { diffConfigs } from './pipeline-config.diff.ts';
import { parsePipelineConfig } from './pipeline-config.validate.ts';
import {
  findModuleInstanceOfPipeline,
  findLatestPipelineVersion,
  findPipelineVersionById,
  findPipelineVersionsPage,
  insertPipelineVersion,
  lockPipelineById,
  pipelineVersionRowToPipelineVersion,
  updatePipeline,
} from './pipelines.repo.ts';
import type { CreatePipelineVersion, PipelineVersion, PipelineVersionDryRun } from './pipelines.schema.ts';
import { getPipelineRow } from './pipelines.service.ts';

export type CreateVersionResult = { kind: 'created'; version: PipelineVersion } | { kind: 'dryRun'; result: PipelineVersionDryRun };

/**
 * The pipelines of a module instance's stack are the instance's: a new version of one could run other
 * steps, or hand OpenTofu other variables, than the instance's validated inputs.
 */
async function assertNotModulePipeline(trx: Trx, pipelineId: string): Promise<void> {
  const owner = await findModuleInstanceOfPipeline(trx, pipelineId);
  if (owner) {
    throw new ConflictError(
      'Stack',
      'MANAGED_BY_MODULE_INSTANCE',
      `Pipeline ${pipelineId} is the pipeline of module instance ${owner}'s stack: it changes only with the instance`,
      {
        metadata: { moduleInstanceId: owner },
      },
    );
  }
}

/**
 * createPipelineVersion validates the config (422 listing every problem) and, unless `dryRun`, stores
 * it as the pipeline's next version. A dry run creates nothing and returns the patch from the latest
 * version to this config.
 */
export async function createPipelineVersion(db: Db, principal: Principal, input: CreatePipelineVersion): Promise<CreateVersionResult> {
  const config = parsePipelineConfig(input.config);
  if (input.dryRun) {
    const pipeline = await getPipelineRow(db, principal, input.pipelineId);
    const base = (await findLatestPipelineVersion(db, pipeline.id))!;
    // The stored config goes back through the parser that let it in: the database hands back plain JSON.
    const patch = diffConfigs(parsePipelineConfig(base.config), config);
    return { kind: 'dryRun', result: { pipelineId: pipeline.id, baseVersion: base.version, baseVersionId: base.id, patch } };
  }
  return db.transaction().execute(async (trx) => {
    // The row lock serializes concurrent creations, so each reads the number the previous one wrote.
    const pipeline = await lockPipelineById(trx, principal.organizationId, input.pipelineId);
    if (!pipeline) throw new NotFoundError('Pipeline', input.pipelineId);
    await assertNotModulePipeline(trx, pipeline.id);
    const id = newId();
    const version = pipeline.latest_version + 1;
    await insertPipelineVersion(trx, { id, organizationId: principal.organizationId, pipelineId: pipeline.id, version, config, createdById: principal.userId });
    await updatePipeline(trx, pipeline.id, { latestVersion: version });
    const row = (await findPipelineVersionById(trx, principal.organizationId, id))!;
    return { kind: 'created' as const, version: pipelineVersionRowToPipelineVersion(row) };
  });
}

export async function getPipelineVersion(db: Db, principal: Principal, id: string) {
  const row = await findPipelineVersionById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('PipelineVersion', id);
  return pipelineVersionRowToPipelineVersion(row);
}

export async function listPipelineVersions(db: Db, principal: Principal, filter: { pipelineId?: string }, page: PageRequest) {
  if (filter.pipelineId !== undefined) await getPipelineRow(db, principal, filter.pipelineId);
  const { items, meta } = toPage(await findPipelineVersionsPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map(pipelineVersionRowToPipelineVersion), meta };
}
