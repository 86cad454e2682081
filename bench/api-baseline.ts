// The benchmark's baseline: a bare Fastify server with `pg`, no Plinth machinery, doing what Plinth's
// GET /auth/whoami and GET /memberships do in the database: the same key lookup as
// src/platform/auth/principal.ts and the same keyset page query. Plinth's figures are read against it.
// Run by bench/api.bench.ts as its own process: `DATABASE_URL=… PORT=… node --import tsx bench/api-baseline.ts`.

import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';

const KEY_LOOKUP = `
    select k.id as key_id, k.token_hash, k.user_id, k.service_account_id, k.expires_at, k.revoked_at,
           u.email, u.full_name, u.short_name, u.global_role,
           sa.name as sa_name, sa.role as sa_role,
           o.id as org_id, o.name as org_name,
           m.id as membership_id, m.role as membership_role
      from api_keys k
      left join users u on u.id = k.user_id
      left join service_accounts sa on sa.id = k.service_account_id
      left join organizations o on o.id = case when k.service_account_id is not null
                                               then sa.organization_id
                                               else coalesce($1::text, k.organization_id) end
      left join memberships m on m.user_id = k.user_id and m.organization_id = o.id
     where k.token_hash = $2`;

/** The query Kysely builds for findMembershipsPage, without and with a cursor. */
const membershipPage = (withCursor: boolean) => `
    select memberships.id, memberships.organization_id, memberships.user_id, memberships.role,
           memberships.invited_email, memberships.invitation_id, memberships.created_at, memberships.updated_at,
           users.email, users.full_name, users.short_name
      from memberships inner join users on users.id = memberships.user_id
     where memberships.organization_id = $1 ${withCursor ? 'and memberships.id > $3' : ''}
     order by memberships.id asc
     limit $2`;
const FIRST_PAGE = membershipPage(false);
const LATER_PAGE = membershipPage(true);

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: false });

async function lookUpKey(authorization: string | undefined) {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
  const hash = createHash('sha256').update(token).digest('hex');
  const { rows } = await pool.query(KEY_LOOKUP, [null, hash]);
  return rows[0];
}

app.get('/auth/whoami', async (request, reply) => {
  const row = await lookUpKey(request.headers.authorization);
  if (!row) return reply.status(401).send({ code: 'Auth:Credential:INVALID' });
  return { data: row };
});

app.get<{ Querystring: { cursor?: string; limit?: string } }>('/memberships', async (request, reply) => {
  const row = await lookUpKey(request.headers.authorization);
  if (!row) return reply.status(401).send({ code: 'Auth:Credential:INVALID' });
  const limit = Math.min(Number(request.query.limit ?? 50), 200);
  const after = request.query.cursor ? (JSON.parse(Buffer.from(request.query.cursor, 'base64url').toString()) as { k: string }).k : null;
  const { rows } = after === null ? await pool.query(FIRST_PAGE, [row.org_id, limit + 1]) : await pool.query(LATER_PAGE, [row.org_id, limit + 1, after]);
  const items = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? Buffer.from(JSON.stringify({ k: items[items.length - 1].id })).toString('base64url') : undefined;
  return { data: items, meta: { limit, nextCursor } };
});

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => {
  void app.close().then(() => pool.end());
});
