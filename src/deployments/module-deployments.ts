// A module deploy is a deployment too: the apply run of the instance's stack, recorded when it starts
// and ended, in the transaction that ends the run, as the run ended.

import { onStackRunFinished } from '../engine/stack-run-hooks.ts';
import { onModuleDeployStarted, type StartedModuleDeploy } from '../modules/module-deploy-hooks.ts';
import type { Executor } from '../platform/db/db.ts';
import type { DeploymentStatus } from '../platform/db/enums.ts';
import { newId } from '../platform/ids.ts';
import { ConflictError } from '../platform/errors.ts';
import { findDeploymentInProgress, finishModuleDeployment, insertModuleDeployment } from './deployments.repo.ts';

export interface ModuleDeploy extends StartedModuleDeploy {
  redeployOf?: string;
  rollbackTo?: string;
}

/** refuseWhileDeploying is the 409 for a redeploy or rollback while another deployment of the instance has not finished. */
export async function refuseWhileDeploying(db: Executor, moduleInstanceId: string): Promise<void> {
  const busy = await findDeploymentInProgress(db, moduleInstanceId);
  if (busy) {
    throw new ConflictError('Deployment', 'IN_PROGRESS', `Deployment ${busy.id} of the module instance has not finished`, {
      metadata: { deploymentId: busy.id },
    });
  }
}

export function recordModuleDeploy(db: Executor, deploy: ModuleDeploy) {
  return insertModuleDeployment(db, { id: newId(), ...deploy });
}

onModuleDeployStarted((trx, deploy) => recordModuleDeploy(trx, deploy));

onStackRunFinished(async (trx, finished) => {
  const status: DeploymentStatus = finished.status === 'SUCCEEDED' ? 'SUCCEEDED' : finished.status === 'CANCELLED' ? 'CANCELLED' : 'FAILED';
  const run = status === 'FAILED' ? await trx.selectFrom('pipeline_runs').select('error').where('id', '=', finished.runId).executeTakeFirst() : undefined;
  await finishModuleDeployment(trx, finished.runId, status, (run?.error as Record<string, unknown> | null) ?? null);
});
