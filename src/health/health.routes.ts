import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { App } from '../platform/http/app.ts';

const Health = Type.Object({ status: Type.String(), database: Type.String() }, { $id: 'Health', title: 'Health' });

export async function healthRoutes(app: App) {
  app.get('/health', {
    config: { public: true },
    schema: { tags: ['health'], summary: 'Liveness and database reachability (no credential)', response: { 200: Health, 503: Health } },
  }, async (_request, reply) => {
    try {
      await sql`select 1`.execute(app.db);
      return { status: 'ok', database: 'ok' };
    } catch {
      return reply.status(503).send({ status: 'degraded', database: 'unreachable' });
    }
  });
}
