import { CompiledQuery, type DatabaseConnection } from 'kysely';
import { newId } from '../ids.ts';
import { chainHashParts, type ChainedFields } from './chain.ts';

/** An audit row before the chain gives it its sequence number and hashes. */
export type AuditEventDraft = Omit<ChainedFields, 'id' | 'seq' | 'createdAt'>;

/**
 * appendAuditEvent appends one row to its organization's chain, on `connection`, inside the caller's
 * open transaction. Taking the chain head's row lock serializes the appends of one organization from
 * here to the commit (only that long: this runs just before COMMIT), so no two rows share a sequence
 * number or a previous hash.
 *
 * One statement: it locks the head, inserts the row with its hash computed by PostgreSQL from the
 * head it locked (chainHashParts: the same bytes chainHash hashes), and moves the head. Locking the
 * row with FOR UPDATE (not an upsert) is what lets the same statement update it. An organization's
 * first row finds no head to lock: the head is then created by an upsert, and the append made again.
 */
export async function appendAuditEvent(connection: DatabaseConnection, draft: AuditEventDraft): Promise<void> {
  const row: Omit<ChainedFields, 'seq'> = { ...draft, id: newId(), createdAt: new Date().toISOString() };
  if (await appendAfterHead(connection, row)) return;
  await connection.executeQuery(CompiledQuery.raw(
    `insert into audit_chain_heads (organization_id, seq, hash) values ($1, 0, '') on conflict (organization_id) do nothing`,
    [draft.organizationId],
  ));
  if (!(await appendAfterHead(connection, row))) throw new Error(`audit chain head of ${draft.organizationId} is missing`);
}

async function appendAfterHead(connection: DatabaseConnection, row: Omit<ChainedFields, 'seq'>): Promise<boolean> {
  const { before, after } = chainHashParts(row);
  const result = await connection.executeQuery(CompiledQuery.raw(
    `with head as (
       select seq + 1 as seq, hash as prev_hash,
              encode(sha256(convert_to(hash || E'\\n' || $17::text || (seq + 1)::text || $18::text, 'UTF8')), 'hex') as hash
         from audit_chain_heads where organization_id = $2 for update),
     e as (
       insert into audit_events (id, organization_id, seq, created_at, actor_type, actor_id, api_key_id, action, resource_type, resource_id,
                                 outcome, status_code, error_code, request_id, ip, user_agent, diff, prev_hash, hash)
       select $1, $2, head.seq, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::jsonb, head.prev_hash, head.hash
         from head
       returning seq, hash)
     update audit_chain_heads h set seq = e.seq, hash = e.hash from e where h.organization_id = $2`,
    [row.id, row.organizationId, row.createdAt, row.actorType, row.actorId, row.apiKeyId, row.action, row.resourceType, row.resourceId,
      row.outcome, row.statusCode, row.errorCode, row.requestId, row.ip, row.userAgent, row.diff === null || row.diff === undefined ? null : JSON.stringify(row.diff),
      before, after],
  ));
  return Number(result.numAffectedRows ?? 0) === 1;
}
