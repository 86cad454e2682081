// The pipelines a stack gets when its creator supplies none (docs/opentofu.md). Change: plan, a human
// approval, then apply of exactly that plan. Destroy: a destroy plan (the plan step of a `destroy` run
// plans with -destroy), its approval, then destroy. A plan without changes needs no approval, and
// `autoapprove` on the run passes every approval.

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
    { id: 'plan', name: 'Plan destroy', type: 'opentofu.plan' },
    { id: 'approve', name: 'Approve destroy', type: 'approval', needs: ['plan'], with: { message: 'Every resource of the stack will be destroyed' } },
    { id: 'destroy', name: 'Destroy', type: 'opentofu.destroy', needs: ['approve'] },
  ],
};
