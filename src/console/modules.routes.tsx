// The console's module pages: an environment's module graph, and a module instance with its
// deployments, the tasks of the newest one, and its domain and certificate events.

import type { App } from '../platform/http/app.ts';
import { PAGE, RecordParams, type Pages } from './pages.tsx';
import { ModuleGraphPage, ModuleInstancePage } from './views/modules.tsx';

/** Deployments and domain events listed on an instance's page, newest first. */
const RECENT = 20;

export function consoleModuleRoutes(app: App, pages: Pages) {
  app.get('/orgs/:org/environments/:id/modules', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const id = encodeURIComponent(request.params.id);
    const [environment, graph] = await Promise.all([ctx.api.get(`/environments/${id}`), ctx.api.get(`/environments/${id}/module-graph`)]);
    return pages.html(
      reply,
      `Modules of ${environment.data.name}`,
      ctx.viewer,
      <ModuleGraphPage orgPath={ctx.orgPath} environment={environment.data} graph={graph.data} />,
    );
  });

  app.get('/orgs/:org/module-instances/:id', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    const instance = (await ctx.api.get(`/module-instances/${encodeURIComponent(request.params.id)}`)).data;
    const [environment, deployments, events] = await Promise.all([
      ctx.api.get(`/environments/${encodeURIComponent(instance.environmentId)}`),
      ctx.api.get('/deployments', { moduleInstanceId: instance.id, order: 'desc', limit: RECENT }),
      ctx.api.get('/domains/events', { moduleInstanceId: instance.id, limit: RECENT }),
    ]);
    const newest = deployments.data[0];
    const resources = newest ? (await ctx.api.get(`/deployments/${encodeURIComponent(newest.id)}/resources`, { limit: 50 })).data : [];
    return pages.html(
      reply,
      instance.name,
      ctx.viewer,
      <ModuleInstancePage
        orgPath={ctx.orgPath}
        instance={instance}
        environmentName={environment.data.name}
        deployments={deployments.data}
        resources={resources}
        domainEvents={[...events.data].reverse()}
      />,
    );
  });
}
