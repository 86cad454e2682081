// A plan step's page: what the plan changes, filtered by address and action in the query string.

import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { stepLogUrl } from './logs.routes.tsx';
import { PAGE, RecordParams, type Pages } from './pages.tsx';
import { PLAN_ACTIONS, PlanPage, type PlanView } from './views/plan.tsx';

/** The plan page of a step, in the console. */
export const stepPlanUrl = (orgPath: string, stepId: string) => `${orgPath}/steps/${encodeURIComponent(stepId)}/plan`;

export function consolePlanRoutes(app: App, pages: Pages) {
  app.get(
    '/orgs/:org/steps/:id/plan',
    {
      ...PAGE,
      schema: {
        hide: true,
        params: RecordParams,
        querystring: Type.Object({
          address: Type.Optional(Type.String({ maxLength: 200 })),
          action: Type.Optional(Type.Union([...PLAN_ACTIONS.map((a) => Type.Literal(a)), Type.Literal('')])),
        }),
      },
    },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const step = (await ctx.api.get(`/pipeline-step-executions/${encodeURIComponent(request.params.id)}`)).data;
      const plan = step.stepType === 'opentofu.plan' && step.status === 'SUCCEEDED' ? (step.outputData as PlanView | undefined) : undefined;
      return pages.html(
        reply,
        `Plan of ${step.stepName}`,
        ctx.viewer,
        <PlanPage
          orgPath={ctx.orgPath}
          step={step}
          logUrl={stepLogUrl(ctx.orgPath, step.id)}
          plan={plan}
          filter={{ address: request.query.address?.trim() || undefined, action: request.query.action || undefined }}
          planUrl={stepPlanUrl(ctx.orgPath, step.id)}
        />,
      );
    },
  );
}
