import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { findUsages } from '../platform/db/dependents.ts';
import { ConflictError, NotFoundError } from '../platform/errors.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { getProjectRow } from '../projects/projects.service.ts';
import { parsePipelineConfig } from './pipeline-config.validate.ts';
import {
  deletePipelinesByIds,
  findPipelineById,
  findPipelinesPage,
  insertPipelineWithFirstVersion,
  lockPipelineById,
  PIPELINE_USAGE,
  pipelineRowToPipeline,
  updatePipeline as updatePipelineRow,
} from './pipelines.repo.ts';
import type { CreatePipeline, UpdatePipeline } from './pipelines.schema.ts';
import type { NamedFilter } from '../platform/schema.ts';

/** getPipelineRow reads a pipeline of the caller's organization; another organization's is a 404. */
export async function getPipelineRow(db: Executor, principal: Principal, id: string) {
  const row = await findPipelineById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('Pipeline', id);
  return row;
}

/** createPipeline validates the config, then creates the pipeline and its version 1 in one transaction. */
export async function createPipeline(db: Db, principal: Principal, input: CreatePipeline) {
  const config = parsePipelineConfig(input.config);
  return db.transaction().execute(async (trx) => {
    if (input.projectId !== undefined) await getProjectRow(trx, principal, input.projectId);
    try {
      const { pipelineId } = await insertPipelineWithFirstVersion(trx, {
        organizationId: principal.organizationId,
        projectId: input.projectId ?? null,
        name: input.name,
        givenId: input.givenId ?? null,
        description: input.description ?? null,
        config,
        createdById: principal.userId,
      });
      return pipelineRowToPipeline((await findPipelineById(trx, principal.organizationId, pipelineId))!);
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new ConflictError('Pipeline', 'ALREADY_EXISTS', `A pipeline with givenId "${input.givenId}" already exists`, {
          metadata: { givenId: input.givenId },
        });
      }
      throw error;
    }
  });
}

export async function getPipeline(db: Db, principal: Principal, id: string) {
  return pipelineRowToPipeline(await getPipelineRow(db, principal, id));
}

export async function listPipelines(db: Db, principal: Principal, filter: NamedFilter & { projectId?: string }, page: PageRequest) {
  if (filter.projectId !== undefined) await getProjectRow(db, principal, filter.projectId);
  const { items, meta } = toPage(await findPipelinesPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map(pipelineRowToPipeline), meta };
}

export async function updatePipeline(db: Db, principal: Principal, id: string, changes: UpdatePipeline) {
  return db.transaction().execute(async (trx) => {
    if (!(await lockPipelineById(trx, principal.organizationId, id))) throw new NotFoundError('Pipeline', id);
    // An empty PATCH changes nothing, updatedAt included.
    if (changes.name !== undefined || changes.description !== undefined) await updatePipelineRow(trx, id, changes);
    return pipelineRowToPipeline((await findPipelineById(trx, principal.organizationId, id))!);
  });
}

/**
 * deletePipeline removes the pipeline with its versions and finished runs. It is refused (409) while
 * a stack uses it or one of its runs is active. The row lock makes the check hold until commit: a
 * run or stack being inserted concurrently waits on it, then fails its foreign key.
 */
export async function deletePipeline(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    if (!(await lockPipelineById(trx, principal.organizationId, id))) throw new NotFoundError('Pipeline', id);
    const usages = await findUsages(trx, 'Pipeline', id);
    const refsOf = (kind: string) =>
      usages
        .filter((u) => u.kind === kind)
        .map((u) => u.ref)
        .slice(0, 10);
    const stackIds = refsOf(PIPELINE_USAGE.stacks);
    if (stackIds.length > 0) {
      throw new ConflictError('Pipeline', 'IN_USE', `The pipeline is used by stack ${stackIds.join(', ')}; change or delete the stack first`, {
        metadata: { stackIds },
      });
    }
    const runIds = refsOf(PIPELINE_USAGE.activeRuns);
    if (runIds.length > 0) {
      throw new ConflictError('Pipeline', 'RUN_ACTIVE', `Run ${runIds.join(', ')} of the pipeline is still active; cancel it or wait for it to end`, {
        metadata: { runIds },
      });
    }
    await deletePipelinesByIds(trx, [id]);
  });
}
