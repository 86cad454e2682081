import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import {
  CloudAccount,
  CloudAccountListQuery,
  CreateCloudAccount,
  CreatedCloudAccount,
  RotatedIngestSecret,
  RotateIngestSecret,
  UpdateCloudAccount,
} from './cloud-accounts.schema.ts';
import {
  createCloudAccount,
  deleteCloudAccount,
  getCloudAccount,
  listCloudAccounts,
  rotateCloudAccountIngestSecret,
  updateCloudAccount,
} from './cloud-accounts.service.ts';

export async function cloudAccountRoutes(app: App) {
  const tags = ['cloud-accounts'];

  app.post(
    '/cloud-accounts',
    {
      config: { permission: 'cloud-account:manage', auditFields: ['givenId', 'name', 'accountId', 'roleArn'] },
      schema: {
        tags,
        summary: 'Register a cloud account (an AWS account and the role to assume); the answer carries its event ingest secret, once',
        body: CreateCloudAccount,
        response: {
          ...errorResponses({ 409: 'A cloud account with this givenId already exists', 422: 'roleArn is not a role of the account accountId' }),
          201: Envelope(CreatedCloudAccount),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createCloudAccount(app.db, request.principal, request.body.data) }),
  );

  app.post(
    '/cloud-accounts/:id/ingest-secret',
    {
      config: { permission: 'cloud-account:manage', auditFields: ['previousSecretValidForSeconds'] },
      schema: {
        tags,
        summary: 'Make a new event ingest secret (shown once); the current one stays valid for previousSecretValidForSeconds (default a day)',
        params: IdParams,
        body: RotateIngestSecret,
        response: { 201: Envelope(RotatedIngestSecret) },
      },
    },
    async (request, reply) =>
      reply.status(201).send({ data: await rotateCloudAccountIngestSecret(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.get(
    '/cloud-accounts',
    {
      schema: { tags, summary: "List the organization's cloud accounts", querystring: CloudAccountListQuery, response: { 200: ListEnvelope(CloudAccount) } },
    },
    async (request) => {
      const { items, meta } = await listCloudAccounts(app.db, request.principal, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/cloud-accounts/:id',
    {
      schema: { tags, summary: 'Read a cloud account', params: IdParams, response: { 200: Envelope(CloudAccount) } },
    },
    async (request) => ({ data: await getCloudAccount(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/cloud-accounts/:id',
    {
      config: { permission: 'cloud-account:manage', auditFields: ['name', 'roleArn'] },
      schema: {
        tags,
        summary: 'Change a cloud account',
        params: IdParams,
        body: UpdateCloudAccount,
        response: { ...errorResponses({ 422: 'roleArn is not a role of the account' }), 200: Envelope(CloudAccount) },
      },
    },
    async (request) => ({ data: await updateCloudAccount(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/cloud-accounts/:id',
    {
      config: { permission: 'cloud-account:manage' },
      schema: {
        tags,
        summary: 'Delete a cloud account no execution environment uses (409 names those that do)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Execution environments still use the cloud account; `details` names them' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteCloudAccount(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
