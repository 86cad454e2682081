import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { Envelope, IdParams, NoContent } from '../platform/schema.ts';
import { SensitiveVariable, SensitiveVariableParams, SetSensitiveVariable } from './stack-variables.schema.ts';
import { listSensitiveVariables, removeSensitiveVariable, setSensitiveVariable } from './stack-variables.service.ts';

/**
 * Sensitive stack variables: write-only (a value goes in and never comes out of the API), sealed at
 * rest, given to OpenTofu by the plan step and masked in its logs. Plain variables are the stack's `variables`.
 */
export async function stackVariableRoutes(app: App) {
  const tags = ['stacks'];

  app.get(
    '/stacks/:id/sensitive-variables',
    {
      schema: {
        tags,
        summary: "List a stack's sensitive variables (names only)",
        params: IdParams,
        response: { 200: Envelope(Type.Array(SensitiveVariable)) },
      },
    },
    async (request) => ({ data: await listSensitiveVariables(app.db, request.principal, request.params.id) }),
  );

  app.put(
    '/stacks/:id/sensitive-variables/:name',
    {
      config: { permission: 'stack:write' },
      schema: {
        tags,
        summary: 'Set a sensitive variable (write-only)',
        params: SensitiveVariableParams,
        body: SetSensitiveVariable,
        response: { 200: Envelope(SensitiveVariable) },
      },
    },
    async (request) => ({
      data: await setSensitiveVariable(app.db, app.secrets, request.principal, request.params.id, request.params.name, request.body.data.value),
    }),
  );

  app.delete(
    '/stacks/:id/sensitive-variables/:name',
    {
      config: { permission: 'stack:write' },
      schema: { tags, summary: 'Remove a sensitive variable', params: SensitiveVariableParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      await removeSensitiveVariable(app.db, request.principal, request.params.id, request.params.name);
      return reply.status(204).send(null);
    },
  );
}
