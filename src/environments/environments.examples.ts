import type { CreateEnvironment, Environment } from './environments.schema.ts';

// Examples for the OpenAPI document, in the project of projects.examples.ts.

export const createEnvironmentExample: { data: CreateEnvironment } = {
  data: { projectId: '0196a3c3a1f27d4e8a0b1c2d3e4f5061', givenId: 'dev', name: 'Dev' },
};

export const environmentExample: Environment = {
  id: '0196a3c4102b7e5f9b1c2d3e4f506172',
  organizationId: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  projectId: '0196a3c3a1f27d4e8a0b1c2d3e4f5061',
  givenId: 'dev',
  name: 'Dev',
  createdAt: '2025-05-02T09:16:02.331Z',
  updatedAt: '2025-05-02T09:16:02.331Z',
};
