// The console's pipeline pages: the list, and a pipeline's page, where a new version's config is
// previewed against the latest version (the API's dry run) before it is saved.

import { Type } from '@sinclair/typebox';
import { hasPermission, type Role } from '../platform/auth/roles.ts';
import type { App } from '../platform/http/app.ts';
import { answerForm, CHOICES, parseJsonField } from './forms.ts';
import { CsrfField, OrgParams, PAGE, RecordParams, type PageContext, type Pages } from './pages.tsx';
import { PipelinePage, type PipelinePageProps, PipelinesPage } from './views/pipelines.tsx';

/** The longest config the form takes (the API's own body limit is larger). */
const CONFIG_TEXT_LIMIT = 256 * 1024;

export function consolePipelineRoutes(app: App, pages: Pages) {
  app.get(
    '/orgs/:org/pipelines',
    { ...PAGE, schema: { hide: true, params: OrgParams, querystring: Type.Object({ cursor: Type.Optional(Type.String({ maxLength: 512 })) }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const pipelines = await ctx.api.get('/pipelines', { limit: 50, cursor: request.query.cursor });
      return pages.html(
        reply,
        'Pipelines',
        ctx.viewer,
        <PipelinesPage orgPath={ctx.orgPath} pipelines={pipelines.data} nextCursor={pipelines.meta.nextCursor} />,
      );
    },
  );

  async function pipelinePage(ctx: PageContext, id: string, extra: Partial<Pick<PipelinePageProps, 'configText' | 'preview' | 'formError'>> = {}) {
    const pipeline = (await ctx.api.get(`/pipelines/${encodeURIComponent(id)}`)).data;
    const [latest, versions] = await Promise.all([
      ctx.api.get(`/pipeline-versions/${encodeURIComponent(pipeline.latestVersionId)}`),
      ctx.api.get('/pipeline-versions', { pipelineId: pipeline.id, limit: CHOICES }),
    ]);
    return (
      <PipelinePage
        orgPath={ctx.orgPath}
        pipeline={pipeline}
        versions={versions.data}
        configText={extra.configText ?? JSON.stringify(latest.data.config, null, 2)}
        canWrite={hasPermission(ctx.me.role as Role, 'pipeline:write')}
        csrfToken={ctx.viewer.csrfToken}
        preview={extra.preview}
        formError={extra.formError}
      />
    );
  }

  app.get('/orgs/:org/pipelines/:id', { ...PAGE, schema: { hide: true, params: RecordParams } }, async (request, reply) => {
    const ctx = await pages.context(request, request.params.org);
    return pages.html(reply, 'Pipeline', ctx.viewer, await pipelinePage(ctx, request.params.id));
  });

  // Preview: the API's dry run, shown with the text kept; save: the new version, then the page again.
  app.post(
    '/orgs/:org/pipelines/:id/versions',
    {
      ...PAGE,
      // A form's config is URL-encoded: up to three bytes for each of it (the console's other forms stop at 16 KiB).
      bodyLimit: 3 * CONFIG_TEXT_LIMIT + 4096,
      schema: {
        hide: true,
        params: RecordParams,
        body: Type.Object({
          _csrf: CsrfField,
          config: Type.String({ maxLength: CONFIG_TEXT_LIMIT }),
          intent: Type.Union([Type.Literal('preview'), Type.Literal('save')]),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const { config: configText, intent } = request.body;
      const pipelineId = request.params.id;
      return answerForm(
        async () => {
          const config = parseJsonField(configText, 'config');
          const data = { pipelineId, config, ...(intent === 'preview' ? { dryRun: true } : {}) };
          const result = (await ctx.api.post('/pipeline-versions', { data })).data;
          if (intent === 'save') return reply.redirect(`${ctx.orgPath}/pipelines/${encodeURIComponent(pipelineId)}`, 303);
          return pages.html(reply, 'Pipeline', ctx.viewer, await pipelinePage(ctx, pipelineId, { configText, preview: result }));
        },
        async (failure, status) =>
          pages.html(reply.status(status), 'Pipeline', ctx.viewer, await pipelinePage(ctx, pipelineId, { configText, formError: failure })),
      );
    },
  );
}
