import { errorResponses } from '../platform/http/openapi.ts';
import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { validatorCompiler } from '../platform/http/validation.ts';
import { Envelope } from '../platform/schema.ts';
import { handlePushWebhook } from './webhooks.service.ts';
import { metrics } from '../platform/metrics/metrics.ts';

const WebhookParams = Type.Object({ codeSourceId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
const WebhookResult = Type.Object({
  deliveryId: Type.String(),
  duplicate: Type.Boolean({ description: 'The delivery id was handled before: nothing was triggered again' }),
  ignored: Type.Optional(Type.String()),
  runIds: Type.Array(Type.String()),
});

/** A push payload may list thousands of commits; this route alone takes up to 5 MiB. */
const WEBHOOK_BODY_LIMIT = 5 * 1024 * 1024;

/**
 * The push webhook. Its own plugin, because it alone reads the body as raw bytes: the signature is
 * computed over exactly what was sent, before any parsing. Fastify scopes content-type parsers to the
 * plugin, so every other route keeps the app's JSON parser and its input rules.
 */
export async function gitWebhookRoutes(app: App) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));

  // Counted when answered: the provider's event name (a closed set: push or other) and the outcome.
  app.addHook('onResponse', async (request, reply) => {
    const event = String(request.headers['x-github-event'] ?? request.headers['x-gitea-event'] ?? request.headers['x-gitlab-event'] ?? '');
    const type = /push/i.test(event) ? 'push' : 'other';
    const result = reply.statusCode === 401 ? 'unverified' : reply.statusCode < 400 ? 'accepted' : 'refused';
    metrics.inboundEvents.inc({ source: 'git', type, result });
  });

  app.post(
    '/webhooks/git/:codeSourceId',
    {
      config: { public: true },
      bodyLimit: WEBHOOK_BODY_LIMIT,
      schema: {
        tags: ['code-sources'],
        operationId: 'receiveGitPushWebhook',
        summary: 'Push webhook of a code source (GitHub, GitLab, Gitea; no credential): verified with its webhook secret, idempotent by delivery id',
        description:
          'GitHub: X-Hub-Signature-256; Gitea: X-Gitea-Signature (HMAC-SHA256 of the raw body); GitLab: X-Gitlab-Token. Anything unverified is 401 and stores nothing. ' +
          "A push to a stack's tracked branch (its source ref) that touches its path triggers a run at the pushed commit.",
        params: WebhookParams,
        body: Type.Unsafe<Buffer>({ type: 'object', additionalProperties: true, description: "The provider's push event, as JSON" }),
        response: {
          ...errorResponses({ 401: 'The delivery is not signed with the webhook secret of a code source (an unknown code source included)', 404: false }),
          200: Envelope(WebhookResult),
        },
      },
      // The body is bytes until it is verified: its schema documents it; the path is validated as everywhere.
      validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : validatorCompiler(route)),
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      return { data: await handlePushWebhook(app.db, app.secrets, request.params.codeSourceId, request.headers, raw) };
    },
  );
}
