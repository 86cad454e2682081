import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, OrderedPaginationQuery } from '../platform/schema.ts';
import { Deployment, DeploymentListQuery, DeploymentResource, DeploymentResourceListQuery } from './deployments.schema.ts';
import { getDeployment, getDeploymentResource, listDeploymentResources, listDeployments, listOrganizationResources } from './deployments.service.ts';
import { replayDeployment } from './redeploy.service.ts';
import { errorResponses } from '../platform/http/openapi.ts';

/** Deployments of module instances and the container tasks they started (docs/deployments.md). */
export async function deploymentRoutes(app: App) {
  const tags = ['deployments'];

  app.get(
    '/deployments',
    {
      schema: {
        tags,
        summary: "List the organization's deployments: module deploys and container-service deployments",
        querystring: DeploymentListQuery,
        response: { 200: ListEnvelope(Deployment) },
      },
    },
    async (request) => {
      const { cursor: _c, limit: _l, order: _o, ...filter } = request.query;
      const { items, meta } = await listDeployments(app.db, request.principal, pageRequest(request.query), filter);
      return { data: items, meta };
    },
  );

  app.get(
    '/deployments/:id',
    { schema: { tags, summary: 'Read a deployment', params: IdParams, response: { 200: Envelope(Deployment) } } },
    async (request) => ({ data: await getDeployment(app.db, request.principal, request.params.id) }),
  );

  app.get(
    '/deployments/:id/resources',
    {
      schema: {
        tags,
        operationId: 'listResourcesOfDeployment',
        summary: 'List the resources (container tasks) of a deployment',
        params: IdParams,
        querystring: OrderedPaginationQuery,
        response: { 200: ListEnvelope(DeploymentResource) },
      },
    },
    async (request) => {
      const { items, meta } = await listDeploymentResources(app.db, request.principal, request.params.id, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  for (const [verb, kind, audit] of [
    ['redeploy', 'REDEPLOY', 'deployment.redeploy'],
    ['rollback', 'ROLLBACK', 'deployment.rollback'],
  ] as const) {
    app.post(
      `/deployments/:id/${verb}`,
      {
        config: { permission: 'run:operate', audit },
        schema: {
          tags,
          operationId: `${verb}Deployment`,
          summary:
            verb === 'redeploy'
              ? "Deploy a deployment's stored release again, as a new deployment (redeployOfDeploymentId names the source)"
              : "Roll back to a deployment's stored release, as a new deployment (rollbackToDeploymentId names it)",
          description:
            "A module deploy: a new run of the instance's stack with the stored inputs and version. A container deployment: its task definition registered " +
            "again and the ECS service updated to it, in the cloud account's AWS account (its role assumed); the new deployment then follows that service " +
            'deployment through its events.',
          params: IdParams,
          response: {
            ...errorResponses({
              409: 'Another deployment of the module instance has not finished',
              422: 'The deployment holds no release to deploy again',
              502: 'AWS refused a request: the message and metadata.awsErrorCode name its error',
            }),
            201: Envelope(Deployment),
          },
        },
      },
      async (request, reply) => reply.status(201).send({ data: await replayDeployment(app.db, app.config.aws, request.principal, request.params.id, kind) }),
    );
  }

  app.get(
    '/deployment-resources',
    {
      schema: {
        tags,
        summary: "List the organization's deployment resources (container tasks)",
        querystring: DeploymentResourceListQuery,
        response: { 200: ListEnvelope(DeploymentResource) },
      },
    },
    async (request) => {
      const { cursor: _c, limit: _l, order: _o, ...filter } = request.query;
      const { items, meta } = await listOrganizationResources(app.db, request.principal, pageRequest(request.query), filter);
      return { data: items, meta };
    },
  );

  app.get(
    '/deployment-resources/:id',
    {
      schema: {
        tags,
        summary: 'Read a deployment resource: the record one level inside the envelope, its type data one level deeper',
        params: IdParams,
        response: { 200: Envelope(Envelope(DeploymentResource)) },
      },
    },
    async (request) => ({ data: { data: await getDeploymentResource(app.db, request.principal, request.params.id) } }),
  );
}
