import { sql } from 'kysely';
import pg from 'pg';
import type { Db, Trx } from './db.ts';

/**
 * Least privilege in the database. The role that migrates owns the schema; the API and the workers
 * connect as a runtime role that owns nothing, is not a superuser, creates no role or database, runs no
 * server program, and may only read and append to the audit log. What the runtime role may do is
 * granted here, anew at every start after the migrations (so a table a new migration made is granted
 * too), by the owner. docs/operations.md#database-roles says how an operator sets it up.
 */

/** The runtime role the embedded PostgreSQL creates. */
export const EMBEDDED_RUNTIME_ROLE = 'plinth_runtime';

/** Serializes the grants of processes starting together (a concurrent GRANT on one table fails). */
const GRANT_LOCK = 0x706c696e; // "plin"

/** The row security policy on the queue's tables that admits the runtime role. */
const QUEUE_POLICY = 'plinth_runtime_access';

/**
 * The schema's own tables that only the owner touches: the migrator's bookkeeping, and the mark that
 * audit chains await their first anchor (one the runtime role set would have a start vouch for heads
 * it rewrote).
 */
const OWNER_ONLY_TABLES = ['kysely_migration', 'kysely_migration_lock', 'audit_anchor_pending'];

/**
 * prepareRuntimeRole makes `role` what the service connects as, in one transaction that processes
 * starting together take in turn (a concurrent GRANT or ALTER ROLE fails): it creates the role
 * (LOGIN, and nothing else, with `password`) when it does not exist, sets that password when
 * `setPassword` (the embedded PostgreSQL's, whose password file is the truth), and grants what the
 * service needs, and no more: reading and writing the tables of the schema and the queue's (the
 * queue's migrations table only read), only SELECT and INSERT on the audit log and nothing on its
 * partitions (an insert routed through the parent needs none), no DELETE on the audit chains' heads
 * (their anchors), nothing on the migrator's tables or the audit anchoring's mark, no CREATE in any schema, and the audit functions
 * that create partitions and apply retention with their owner's rights. It refuses a role that exists with more: a superuser, or one that may create
 * roles or databases, replicate or bypass row security.
 */
export async function prepareRuntimeRole(owner: Db, role: string, password: string | undefined, setPassword: boolean): Promise<void> {
  await owner.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${GRANT_LOCK})`.execute(trx);
    const created = await ensureRole(trx, role);
    // A password travels as a literal in ALTER ROLE (it takes no parameter); it is the operator's or generated, never a tenant's.
    if (password !== undefined && (setPassword || created)) await sql`alter role ${sql.id(role)} password ${sql.lit(password)}`.execute(trx);
    await grant(trx, role);
  });
}

/** Creates `role` when missing (true), or checks that the one there is no more than a login. */
async function ensureRole(trx: Trx, role: string): Promise<boolean> {
  const existing = await sql<{ unsafe: boolean }>`
    select rolsuper or rolcreaterole or rolcreatedb or rolreplication or rolbypassrls as unsafe from pg_roles where rolname = ${role}`.execute(trx);
  if (existing.rows[0]?.unsafe)
    throw new Error(`the runtime role ${role} exists with privileges it must not have (superuser, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS)`);
  if (existing.rows.length) return false;
  await sql`create role ${sql.id(role)} login nosuperuser nocreatedb nocreaterole noreplication nobypassrls`.execute(trx);
  return true;
}

async function grant(trx: Trx, role: string): Promise<void> {
  const to = sql.id(role);
  const database = sql.id((await sql<{ name: string }>`select current_database() as name`.execute(trx)).rows[0]!.name);
  await sql`grant connect on database ${database} to ${to}`.execute(trx);
  await sql`revoke create on schema public from public`.execute(trx);
  for (const schema of ['public', 'graphile_worker']) {
    const s = sql.id(schema);
    await sql`grant usage on schema ${s} to ${to}`.execute(trx);
    await sql`grant select, insert, update, delete on all tables in schema ${s} to ${to}`.execute(trx);
    await sql`grant usage, select, update on all sequences in schema ${s} to ${to}`.execute(trx);
    await sql`grant execute on all functions in schema ${s} to ${to}`.execute(trx);
  }
  // The queue's own bookkeeping: read at its start, written only by its migrations (the owner's).
  await sql`revoke insert, update, delete, truncate on graphile_worker.migrations from ${to}`.execute(trx);
  await admitToQueueTables(trx, role);
  await sql`revoke all on audit_events from ${to}`.execute(trx);
  await sql`grant select, insert on audit_events to ${to}`.execute(trx);
  // A chain head is moved by every append, but never removed: a chain whose rows and head are both gone
  // looks like one never written, which only a role that may delete both could make (the owner).
  await sql`revoke delete, truncate on audit_chain_heads from ${to}`.execute(trx);
  // The audit log's partitions, and the owner's own tables (the migrator's exist once it has run).
  const ownerOnly = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'audit_events'::regclass
    union all
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relname = any(${OWNER_ONLY_TABLES})`.execute(
    trx,
  );
  const tables = sql.join(ownerOnly.rows.map((t) => sql`public.${sql.id(t.name)}`));
  if (ownerOnly.rows.length) await sql`revoke all on ${tables} from ${to}`.execute(trx);
}

/**
 * The queue keeps row security on its tables so that only their owner uses them: a policy lets the
 * runtime role through. Made only where missing (or for another role): making one locks its table
 * against the workers using it.
 */
async function admitToQueueTables(trx: Trx, role: string): Promise<void> {
  const missing = await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'graphile_worker' and c.relrowsecurity
       and not exists (select 1 from pg_policies p where p.schemaname = 'graphile_worker' and p.tablename = c.relname
                         and p.policyname = ${QUEUE_POLICY} and p.roles = array[${role}]::name[])`.execute(trx);
  for (const { name } of missing.rows) {
    const table = sql`graphile_worker.${sql.id(name)}`;
    await sql`drop policy if exists ${sql.id(QUEUE_POLICY)} on ${table}`.execute(trx);
    await sql`create policy ${sql.id(QUEUE_POLICY)} on ${table} for all to ${sql.id(role)} using (true) with check (true)`.execute(trx);
  }
}

/** Whether `url` logs in (its role exists and takes its password). */
export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * privilegeProblems says what is wrong with the role this connection uses as the service's runtime
 * role: empty when it is as narrow as it should be. The start logs them loudly.
 */
export async function privilegeProblems(db: Db): Promise<string[]> {
  const { rows } = await sql<{
    superuser: boolean;
    createrole: boolean;
    createdb: boolean;
    bypassrls: boolean;
    program: boolean;
    files: boolean;
    owner: boolean;
    owns: number;
    create: boolean;
    audit_update: boolean;
    audit_heads_delete: boolean;
    audit_anchor_mark: boolean;
  }>`
    select r.rolsuper as superuser, r.rolcreaterole as createrole, r.rolcreatedb as createdb, r.rolbypassrls as bypassrls,
           pg_has_role(current_user, 'pg_execute_server_program', 'member') as program,
           pg_has_role(current_user, 'pg_read_server_files', 'member') or pg_has_role(current_user, 'pg_write_server_files', 'member') as files,
           pg_has_role(current_user, (select relowner from pg_class where oid = 'audit_events'::regclass), 'member') as owner,
           (select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where n.nspname in ('public', 'graphile_worker') and c.relowner = r.oid)::int as owns,
           has_schema_privilege(current_user, 'public', 'CREATE') or has_database_privilege(current_user, current_database(), 'CREATE') as create,
           has_table_privilege(current_user, 'audit_events', 'UPDATE') or has_table_privilege(current_user, 'audit_events', 'DELETE') as audit_update,
           has_table_privilege(current_user, 'audit_chain_heads', 'DELETE') or has_table_privilege(current_user, 'audit_chain_heads', 'TRUNCATE') as audit_heads_delete,
           has_table_privilege(current_user, 'audit_anchor_pending', 'INSERT') as audit_anchor_mark
      from pg_roles r where r.rolname = current_user`.execute(db);
  const r = rows[0];
  if (!r) return ["the connection's role is not found"];
  return [
    r.superuser && 'is a superuser (anything that reaches SQL reaches the operating system)',
    r.createrole && 'may create roles',
    r.createdb && 'may create databases',
    r.bypassrls && 'bypasses row security',
    r.program && 'may run server programs (pg_execute_server_program)',
    r.files && "may read or write the server's files",
    r.owner && !r.superuser && 'is a member of the role that owns the schema',
    r.owns > 0 && `owns ${r.owns} of the schema's tables`,
    r.create && 'may create schemas or tables',
    r.audit_update && 'may change or delete audit rows',
    r.audit_heads_delete && "may delete the audit chains' heads",
    r.audit_anchor_mark && 'may mark the audit chains for anchoring',
  ].filter((problem): problem is string => typeof problem === 'string');
}
