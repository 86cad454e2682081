// The pipelines a stack gets when its creator supplies none. Change: plan, a human approval, then
// apply. Destroy: a destroy plan's approval, then destroy. Both use OpenTofu steps, which this engine
// does not run yet (they fail with Engine:StepType:NOT_IMPLEMENTED until the OpenTofu issue lands).

import type { PipelineConfig } from '../pipelines/pipeline-config.ts';

export const DEFAULT_CHANGE_PIPELINE: PipelineConfig = {
  steps: [
    { id: 'plan', name: 'Plan', type: 'opentofu.plan' },
    { id: 'approve', name: 'Approve', type: 'approval', needs: ['plan'], with: { message: 'Review the plan before it is applied' } },
    { id: 'apply', name: 'Apply', type: 'opentofu.apply', needs: ['approve'] },
  ],
};

export const DEFAULT_DESTROY_PIPELINE: PipelineConfig = {
  steps: [
    { id: 'approve', name: 'Approve destroy', type: 'approval', with: { message: 'Every resource of the stack will be destroyed' } },
    { id: 'destroy', name: 'Destroy', type: 'opentofu.destroy', needs: ['approve'] },
  ],
};
