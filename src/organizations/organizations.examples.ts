import type { CreateOrganization, Organization } from './organizations.schema.ts';

// Examples for the OpenAPI document: one organization, Acme, that the other domains' examples live in.

export const createOrganizationExample: { data: CreateOrganization } = { data: { name: 'Acme', billingEmail: 'billing@acme.example' } };

export const organizationExample: Organization = {
  id: '0196a3c2e8b07c3d9f1e2a4b5c6d7e80',
  name: 'Acme',
  billingEmail: 'billing@acme.example',
  createdAt: '2025-05-02T09:14:03.512Z',
  updatedAt: '2025-05-02T09:14:03.512Z',
};
