import type { CreateProject, Project } from './projects.schema.ts';

// Examples for the OpenAPI document, in the organization of organizations.examples.ts.

export const createProjectExample: { data: CreateProject } = { data: { givenId: 'web', name: 'Web', description: 'The public website' } };

export const projectExample: Project = {
  id: '0196a3c3a1f27d4e8a0b1c2d3e4f5061',
  organizationId: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  givenId: 'web',
  name: 'Web',
  description: 'The public website',
  createdAt: '2025-05-02T09:15:41.007Z',
  updatedAt: '2025-05-02T09:15:41.007Z',
};
