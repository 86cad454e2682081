import { createProjectExample, projectExample } from './projects.examples.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import type { App } from '../platform/http/app.ts';
import { pageRequest } from '../platform/pagination.ts';
import { Envelope, Example, IdParams, ListEnvelope, NoContent } from '../platform/schema.ts';
import { CreateProject, Project, ProjectListQuery, UpdateProject } from './projects.schema.ts';
import { createProject, deleteProject, getProject, listProjects, updateProject } from './projects.service.ts';

export async function projectRoutes(app: App) {
  const tags = ['projects'];

  app.post(
    '/projects',
    {
      config: { permission: 'project:write', auditFields: ['givenId', 'name', 'description'] },
      schema: {
        tags,
        summary: 'Create a project',
        body: Example(CreateProject, createProjectExample),
        response: { ...errorResponses({ 409: 'A project with this givenId already exists' }), 201: Example(Envelope(Project), { data: projectExample }) },
      },
    },
    async (request, reply) => reply.status(201).send({ data: await createProject(app.db, request.principal, request.body.data) }),
  );

  app.get(
    '/projects',
    {
      schema: { tags, summary: "List the organization's projects", querystring: ProjectListQuery, response: { 200: ListEnvelope(Project) } },
    },
    async (request) => {
      const { items, meta } = await listProjects(app.db, request.principal, request.query, pageRequest(request.query));
      return { data: items, meta };
    },
  );

  app.get(
    '/projects/:id',
    {
      schema: { tags, summary: 'Read a project', params: IdParams, response: { 200: Envelope(Project) } },
    },
    async (request) => ({ data: await getProject(app.db, request.principal, request.params.id) }),
  );

  app.patch(
    '/projects/:id',
    {
      config: { permission: 'project:write', auditFields: ['name', 'description'] },
      schema: { tags, summary: 'Change a project', params: IdParams, body: UpdateProject, response: { 200: Envelope(Project) } },
    },
    async (request) => ({ data: await updateProject(app.db, request.principal, request.params.id, request.body.data) }),
  );

  app.delete(
    '/projects/:id',
    {
      config: { permission: 'project:write' },
      schema: {
        tags,
        summary: 'Delete a project nothing uses any more (409 names what still does)',
        params: IdParams,
        response: { ...errorResponses({ 409: 'Something still uses the project; `details` names it' }), 204: NoContent },
      },
    },
    async (request, reply) => {
      await deleteProject(app.db, request.principal, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
