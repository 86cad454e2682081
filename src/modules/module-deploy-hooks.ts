import type { Trx } from '../platform/db/db.ts';

/** A module deploy that just started: the apply run of the instance's stack, in the transaction that started it. */
export interface StartedModuleDeploy {
  organizationId: string;
  projectId: string;
  environmentId: string;
  moduleInstanceId: string;
  description: string;
  triggerSource: 'API' | 'ENVIRONMENT_DEPLOY' | 'REDEPLOY' | 'ROLLBACK';
  pipelineRunId: string;
  /** The stack variant of the run's data: the inputs and version deployed, and the ones before. */
  data: Record<string, unknown>;
}

export type ModuleDeployHook = (trx: Trx, deploy: StartedModuleDeploy) => Promise<unknown>;

const hooks: ModuleDeployHook[] = [];

/**
 * onModuleDeployStarted lets a domain above the module catalogue act in the transaction that starts a
 * deploy (deployments records it). The catalogue cannot import that domain, which imports it; it
 * registers here, once, when its module is loaded.
 */
export function onModuleDeployStarted(hook: ModuleDeployHook): void {
  hooks.push(hook);
}

export async function moduleDeployStarted(trx: Trx, deploy: StartedModuleDeploy): Promise<void> {
  for (const hook of hooks) await hook(trx, deploy);
}
