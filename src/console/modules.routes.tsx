// The console's module pages: an environment's module graph, and a module instance with its
// deployments, the tasks of the newest one, and its domain and certificate events.

import type { App } from '../platform/http/app.ts';
import { type LivePages, versionOf } from './live.ts';
import { PAGE, type PageContext, RecordParams, type Pages } from './pages.tsx';
import { renderFragment } from './views/layout.tsx';
import { InstanceActivity, type InstanceActivityProps, ModuleGraphPage, ModuleInstancePage } from './views/modules.tsx';

/** Deployments and domain events listed on an instance's page, newest first. */
const RECENT = 20;

export function consoleModuleRoutes(app: App, pages: Pages, live: LivePages) {
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
    const [environment, activity] = await Promise.all([
      ctx.api.get(`/environments/${encodeURIComponent(instance.environmentId)}`),
      activityOf(ctx, instance.id),
    ]);
    const liveUrl = `${ctx.orgPath}/module-instances/${encodeURIComponent(instance.id)}/live?v=${activityVersion(activity)}`;
    return pages.html(
      reply,
      instance.name,
      ctx.viewer,
      <ModuleInstancePage instance={instance} environmentName={environment.data.name} liveUrl={liveUrl} {...activity} />,
    );
  });

  // The instance page's event stream: its deployments, tasks and domain events whenever they change. It never finishes.
  live.recordStream('module-instances', 'activity', (ctx, id) => async () => {
    // Once the instance is deleted its domain events are a 404, which ends the stream.
    const activity = await activityOf(ctx, id);
    return { version: activityVersion(activity), render: async () => renderFragment(<InstanceActivity {...activity} />), finished: false };
  });
}

/** What an instance's page shows of its deployments: the newest, the newest one's tasks, and its domain events (oldest first). */
async function activityOf(ctx: PageContext, instanceId: string): Promise<InstanceActivityProps> {
  const [deployments, events] = await Promise.all([
    ctx.api.get('/deployments', { moduleInstanceId: instanceId, order: 'desc', limit: RECENT }),
    ctx.api.get('/domains/events', { moduleInstanceId: instanceId, limit: RECENT }),
  ]);
  const newest = deployments.data[0];
  const resources = newest ? (await ctx.api.get(`/deployments/${encodeURIComponent(newest.id)}/resources`, { limit: 50 })).data : [];
  return { orgPath: ctx.orgPath, deployments: deployments.data, resources, domainEvents: [...events.data].reverse() };
}

/** What the activity shows changes exactly when one of these does. */
function activityVersion(a: InstanceActivityProps): string {
  return versionOf([
    a.deployments.map((d) => [d.id, d.status, d.updatedAt]),
    a.resources.map((r) => [r.id, r.lastStatus, r.lastEventAt]),
    a.domainEvents.map((e) => e.id),
  ]);
}
