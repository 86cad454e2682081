import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import { currentIsolation } from '../engine/sandbox/index.ts';
import type { App } from '../platform/http/app.ts';

const NullableNumber = Type.Union([Type.Number(), Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** How this process's worker isolates steps (docs/sandbox.md), as probed once at its start. */
const Isolation = Type.Object({
  mode: Type.Union([Type.Literal('namespaces'), Type.Literal('off'), Type.Literal('unavailable'), Type.Literal('no-worker')], {
    description:
      '`namespaces`: steps are isolated; `off`: the single-tenant opt-out (PLINTH_SANDBOX=off); `unavailable`: this host cannot isolate and script steps fail; `no-worker`: this process runs no steps',
  }),
  requested: NullableString,
  privileges: Type.Union([Type.Literal('root'), Type.Literal('rootless'), Type.Null()], {
    description:
      '`root`: the worker runs as root and gives each step a uid of its own on the host; `rootless`: the worker runs as a normal user and each step runs in user namespaces of its own (docs/sandbox.md says what differs); null without isolation',
  }),
  network: NullableString,
  cgroup: NullableString,
  limits: Type.Object(
    { maxProcesses: NullableNumber, memoryMb: NullableNumber, cpus: NullableNumber },
    { description: 'limits enforced on every step; null where not enforced' },
  ),
  detail: Type.String(),
});

const Health = Type.Object(
  {
    status: Type.String({
      description:
        "`ok`; `degraded` when the database is unreachable (503) or when this process's worker cannot isolate steps, so script steps fail (200: the API still serves)",
    }),
    database: Type.String(),
    isolation: Isolation,
    problems: Type.Array(Type.String(), { description: 'what makes it degraded, each with its fix; empty when ok' }),
  },
  { $id: 'Health', title: 'Health' },
);

export async function healthRoutes(app: App) {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        tags: ['health'],
        operationId: 'getHealth',
        summary: 'Liveness, database reachability and step isolation (no credential)',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      const isolation = currentIsolation();
      const problems =
        isolation.mode === 'unavailable'
          ? [
              `script steps fail: this worker cannot isolate them (${isolation.detail}); see docs/sandbox.md, or set PLINTH_SANDBOX=off where one tenant runs every pipeline`,
            ]
          : [];
      try {
        await sql`select 1`.execute(app.db);
        return { status: problems.length ? 'degraded' : 'ok', database: 'ok', isolation, problems };
      } catch {
        return reply.status(503).send({ status: 'degraded', database: 'unreachable', isolation, problems: ['the database is unreachable', ...problems] });
      }
    },
  );
}
