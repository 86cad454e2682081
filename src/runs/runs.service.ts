import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { NotFoundError } from '../platform/errors.ts';
import { serialCursorKey, toPage, type PageRequest } from '../platform/pagination.ts';
import { approveStep, cancelRun as cancelRunCommand, rejectStep, retryRun as retryRunCommand } from '../engine/run-commands.ts';
import { findExecutionById, findExecutionsPage, findRunById, findRunsPage, findTransitionsPage } from './runs.repo.ts';
import { hasPermission } from '../platform/auth/roles.ts';
import { executionRowToExecution, runRowToRun, transitionRowToTransition } from './runs.map.ts';
import type { RunListQuery, StepExecutionListQuery } from './runs.schema.ts';

async function getRunRow(db: Executor, principal: Principal, id: string) {
  const row = await findRunById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('PipelineRun', id);
  return row;
}

export async function getExecutionRow(db: Executor, principal: Principal, id: string) {
  const row = await findExecutionById(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('StepExecution', id);
  return row;
}

/** Plans show the values of a stack's resources: reading them is reading state (state:read). */
export function readsPlans(principal: Principal): boolean {
  return hasPermission(principal.role, 'state:read');
}

export async function getRun(db: Executor, principal: Principal, id: string) {
  return runRowToRun(await getRunRow(db, principal, id));
}

export async function listRuns(db: Db, principal: Principal, query: RunListQuery, page: PageRequest) {
  const { pipelineId, stackId, environmentId, createdById, status, ref, commitSha } = query;
  const filter = { pipelineId, stackId, environmentId, createdById, status, ref, commitSha };
  const { items, meta } = toPage(await findRunsPage(db, principal.organizationId, filter, page), page, (r) => r.id);
  return { items: items.map(runRowToRun), meta };
}

/** cancelRun stops a run that is not finished (409 once it is); its processes are killed by their workers. */
export async function cancelRun(db: Db, principal: Principal, id: string) {
  return db.transaction().execute(async (trx) => {
    await getRunRow(trx, principal, id);
    await cancelRunCommand(trx, id, principal.userId);
    return getRun(trx, principal, id);
  });
}

/** retryRun starts a FAILED or CANCELLED run again as its next attempt epoch (409 otherwise). */
export async function retryRun(db: Db, principal: Principal, id: string) {
  return db.transaction().execute(async (trx) => {
    await getRunRow(trx, principal, id);
    await retryRunCommand(trx, id, principal.userId);
    return getRun(trx, principal, id);
  });
}

export async function listExecutions(db: Db, principal: Principal, runId: string, query: StepExecutionListQuery, page: PageRequest) {
  await getRunRow(db, principal, runId);
  const rows = await findExecutionsPage(db, runId, { attemptEpoch: query.attemptEpoch }, page);
  const { items, meta } = toPage(rows, page, (r) => r.id);
  return { items: items.map((row) => executionRowToExecution(row, readsPlans(principal))), meta };
}

/** listTransitions reads the run's append-only history of status changes, oldest first. */
export async function listTransitions(db: Db, principal: Principal, runId: string, page: PageRequest) {
  await getRunRow(db, principal, runId);
  const after = serialCursorKey(page.after);
  const { items, meta } = toPage(await findTransitionsPage(db, runId, { ...page, after }), page, (r) => String(r.id));
  return { items: items.map(transitionRowToTransition), meta };
}

export async function getExecution(db: Db, principal: Principal, id: string) {
  return executionRowToExecution(await getExecutionRow(db, principal, id), readsPlans(principal));
}

/** decideApproval approves or rejects a step WAITING_FOR_APPROVAL; of two concurrent decisions one wins, the other is 409. */
export async function decideApproval(db: Db, principal: Principal, id: string, decision: 'approve' | 'reject') {
  return db.transaction().execute(async (trx) => {
    const row = await getExecutionRow(trx, principal, id);
    if (decision === 'approve') await approveStep(trx, row.pipeline_run_id, id, principal.userId);
    else await rejectStep(trx, row.pipeline_run_id, id, principal.userId);
    return executionRowToExecution((await findExecutionById(trx, principal.organizationId, id))!, readsPlans(principal));
  });
}
