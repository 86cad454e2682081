/**
 * The benchmark's minimal floor: a bare Fastify server with `pg` answering GET /auth/whoami with the
 * least a credential check can do: the SHA-256 of the bearer token looked up, joined to its user and
 * organization, as a named (prepared) statement. No Plinth machinery, no role, no membership. Plinth's
 * whoami is read against it (the target: at least 0.8× its requests/s); bench/api-baseline.ts runs Plinth's own query instead.
 * Run by bench/api.bench.ts as its own process: `DATABASE_URL=… PORT=… node --import tsx bench/api-floor.ts`.
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import pg from 'pg';

const KEY_LOOKUP = {
  name: 'floor_key_lookup',
  text: `select k.id, k.revoked_at, k.expires_at, u.id as user_id, u.email, o.id as organization_id, o.name as organization_name
           from api_keys k
           join users u on u.id = k.user_id
           join organizations o on o.id = k.organization_id
          where k.token_hash = $1`,
};

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: false });

app.get('/auth/whoami', async (request, reply) => {
  const authorization = request.headers.authorization;
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : '';
  const hash = createHash('sha256').update(token).digest('hex');
  const { rows } = await pool.query({ ...KEY_LOOKUP, values: [hash] });
  const row = rows[0];
  if (!row || row.revoked_at || (row.expires_at && row.expires_at <= new Date())) return reply.status(401).send({ code: 'Auth:Credential:INVALID' });
  return { data: row };
});

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.on('SIGTERM', () => {
  void app.close().then(() => pool.end());
});
