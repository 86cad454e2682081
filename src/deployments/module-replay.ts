// A module deploy replayed (a redeploy or a rollback of one): a new run of the instance's stack that
// deploys a release the instance deployed before.

import { findVersionById } from '../modules/module-versions.repo.ts';
import { lockForWrite, stackSourceOf } from '../modules/module-instances.service.ts';
import { lockProducerStacks } from '../modules/module-deploys.ts';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { RuleViolationError } from '../platform/errors.ts';
import { updateStack as updateStackRow } from '../stacks/stacks.repo.ts';
import { triggerStackRunIn } from '../stacks/stacks.service.ts';
import { recordModuleDeploy, refuseWhileDeploying } from './module-deployments.ts';

/** What a deployment of an instance deployed, to deploy again: the stack's variables and the version. */
export interface ModuleRelease {
  moduleInput: Record<string, unknown>;
  moduleVersionId: string;
}

/**
 * replayModuleDeploy starts a run of the instance's stack that deploys a release it deployed before: the
 * stack takes that release's variables and version (and keeps them until the instance's next deploy or
 * change); the instance's own values and version stay what they are. Refused while another deployment
 * of the instance has not finished. Returns the new deployment.
 */
export async function replayModuleDeploy(
  db: Db,
  principal: Principal,
  instanceId: string,
  release: ModuleRelease,
  origin: { triggerSource: 'REDEPLOY' | 'ROLLBACK'; sourceDeploymentId: string },
) {
  return db.transaction().execute(async (trx) => {
    let waitForStackIds: string[] = [];
    const row = await lockForWrite(trx, principal, instanceId, {
      live: true,
      beforeStack: async (seen) => {
        waitForStackIds = await lockProducerStacks(trx, seen.id);
      },
    });
    await refuseWhileDeploying(trx, row.id);
    const version = await findVersionById(trx, release.moduleVersionId);
    if (!version) {
      throw new RuleViolationError(
        'Deployment',
        'NOT_REDEPLOYABLE',
        `Deployment ${origin.sourceDeploymentId} cannot be deployed again: its module version is gone`,
      );
    }
    await updateStackRow(trx, row.stack_id, { source: stackSourceOf(version), variables: release.moduleInput });
    const data = {
      kind: 'stack',
      module_input: release.moduleInput,
      module_version_id: version.id,
      ...(row.applied_values ? { previous_module_input: row.applied_values } : {}),
      ...(row.applied_version_id ? { previous_module_version_id: row.applied_version_id } : {}),
    };
    const verb = origin.triggerSource === 'ROLLBACK' ? 'Roll back' : 'Redeploy';
    const description = `${verb} module instance ${row.given_id} to deployment ${origin.sourceDeploymentId} (version ${version.version})`;
    const run = await triggerStackRunIn(trx, principal, row.stack_id, { action: 'apply', autoapprove: false, description, data, waitForStackIds });
    return recordModuleDeploy(trx, {
      organizationId: row.organization_id,
      projectId: row.project_id,
      environmentId: row.environment_id,
      moduleInstanceId: row.id,
      description,
      triggerSource: origin.triggerSource,
      pipelineRunId: run.id,
      data,
      ...(origin.triggerSource === 'ROLLBACK' ? { rollbackTo: origin.sourceDeploymentId } : { redeployOf: origin.sourceDeploymentId }),
    });
  });
}
