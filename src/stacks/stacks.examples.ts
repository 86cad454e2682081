import type { CreateStack, Stack, TriggerStackRun } from './stacks.schema.ts';

// Examples for the OpenAPI document, in the environment of environments.examples.ts.

export const createStackExample: { data: CreateStack } = {
  data: {
    projectId: '0196a3c3a1f27d4e8a0b1c2d3e4f5061',
    environmentId: '0196a3c4102b7e5f9b1c2d3e4f506172',
    name: 'site',
    givenId: 'site',
    source: { codeSourceId: '0196a3c4f0a87b1c8d2e3f405162738a', ref: 'main', path: 'infra/site', onPush: 'plan' },
    variables: { region: 'eu-west-1', instance_count: 2 },
  },
};

export const stackExample: Stack = {
  id: '0196a3c5c3d47f2a8e1b2c3d4e5f6a7b',
  organizationId: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  projectId: '0196a3c3a1f27d4e8a0b1c2d3e4f5061',
  environmentId: '0196a3c4102b7e5f9b1c2d3e4f506172',
  changePipelineId: '0196a3c5c3d87a1b9c2d3e4f5a6b7c8d',
  destroyPipelineId: '0196a3c5c3da7b2c8d3e4f5a6b7c8d9e',
  type: 'OPENTOFU',
  name: 'site',
  givenId: 'site',
  source: { codeSourceId: '0196a3c4f0a87b1c8d2e3f405162738a', ref: 'main', path: 'infra/site', onPush: 'plan' },
  variables: { region: 'eu-west-1', instance_count: 2 },
  serviceStateBackendWorkspace: 'stack-0196a3c5c3d47f2a8e1b2c3d4e5f6a7b',
  createdAt: '2025-05-02T09:18:27.940Z',
  updatedAt: '2025-05-02T09:18:27.940Z',
};

export const triggerStackRunExample: { data: TriggerStackRun } = { data: { action: 'apply', description: 'Scale to two instances' } };
