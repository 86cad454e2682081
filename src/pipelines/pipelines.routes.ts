import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { createPipelineVersion, getPipelineVersion, listPipelineVersions } from './pipeline-versions.service.ts';
import {
  CreatePipeline,
  CreatePipelineVersion,
  ListPipelinesQuery,
  ListPipelineVersionsQuery,
  Pipeline,
  PipelineVersion,
  PipelineVersionDryRun,
  UpdatePipeline,
} from './pipelines.schema.ts';
import { createPipeline, deletePipeline, getPipeline, listPipelines, updatePipeline } from './pipelines.service.ts';

export async function pipelineRoutes(app: App) {
  const tags = ['pipelines'];

  app.post(
    '/pipelines',
    {
      config: { permission: 'pipeline:write', auditFields: ['givenId', 'name', 'projectId', 'description'] },
      schema: {
        tags,
        summary: 'Create a pipeline with version 1 of its config',
        body: CreatePipeline,
        response: {
          ...errorResponses({ 409: 'A pipeline with this givenId already exists', 422: 'The pipeline config is not valid; `details` lists every problem' }),
          201: Envelope(Pipeline),
        },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createPipeline(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/pipelines',
    {
      schema: {
        tags,
        summary: "List the organization's pipelines",
        querystring: ListPipelinesQuery,
        response: { ...errorResponses({ 404: 'The projectId filter names no project of the organization' }), 200: ListEnvelope(Pipeline) },
      },
    },
    async (request) => {
      const { items, meta } = await listPipelines(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/pipelines/:id',
    {
      schema: { tags, summary: 'Read a pipeline', params: IdParams, response: { 200: Envelope(Pipeline) } },
    },
    async (request) => ({ data: await getPipeline(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/pipelines/:id',
    {
      config: { permission: 'pipeline:write', auditFields: ['name', 'description'] },
      schema: { tags, summary: "Change a pipeline's name or description", params: IdParams, body: UpdatePipeline, response: { 200: Envelope(Pipeline) } },
    },
    async (request) => ({ data: await updatePipeline(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/pipelines/:id',
    {
      config: { permission: 'pipeline:write' },
      schema: {
        tags,
        summary: 'Delete a pipeline permanently, with its versions and finished runs (409 while a stack uses it or a run is active)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'A stack uses the pipeline, or a run of it is active' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deletePipeline(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/pipeline-versions',
    {
      config: { permission: 'pipeline:write', auditFields: ['pipelineId', 'dryRun'] },
      schema: {
        tags,
        summary: 'Create the next version of a pipeline, or with dryRun the patch against the latest version',
        body: CreatePipelineVersion,
        response: {
          ...errorResponses({ 422: 'The pipeline config is not valid; `details` lists every problem' }),
          201: Envelope(PipelineVersion),
          200: Envelope(PipelineVersionDryRun),
        },
      },
    },
    async (request, reply) => {
      const outcome = await createPipelineVersion(app.db, request.principal, request.body.data);
      return outcome.kind === 'dryRun' ? reply.status(200).send({ data: outcome.result }) : reply.status(201).send({ data: outcome.version });
    },
  );

  app.get(
    '/pipeline-versions',
    {
      schema: {
        tags,
        summary: 'List pipeline versions, oldest first',
        querystring: ListPipelineVersionsQuery,
        response: { ...errorResponses({ 404: 'The pipelineId filter names no pipeline of the organization' }), 200: ListEnvelope(PipelineVersion) },
      },
    },
    async (request) => {
      const { pipelineId, ...pagination } = request.query;
      const { items, meta } = await listPipelineVersions(app.db, request.principal, { pipelineId }, pageRequest(pagination));
      return { data: items, meta };
    },
  );

  app.get(
    '/pipeline-versions/:id',
    {
      schema: { tags, summary: 'Read a pipeline version', params: IdParams, response: { 200: Envelope(PipelineVersion) } },
    },
    async (request) => ({ data: await getPipelineVersion(app.db, request.principal, request.params.id) }),
  );
}
