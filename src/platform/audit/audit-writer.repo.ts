import { CompiledQuery, type DatabaseConnection } from 'kysely';
import { newId } from '../ids.ts';
import { chainHash, type ChainedFields } from './chain.ts';

/** An audit row before the chain gives it its sequence number and hashes. */
export type AuditEventDraft = Omit<ChainedFields, 'id' | 'seq' | 'createdAt'>;

/**
 * appendAuditEvent appends one row to its organization's chain, on `connection`, inside the caller's
 * open transaction. Taking the chain head's row lock serializes the appends of one organization from
 * here to the commit (only that long: this runs just before COMMIT), so no two rows share a sequence
 * number or a previous hash. Two statements: lock-and-read the head, then insert and move the head.
 */
export async function appendAuditEvent(connection: DatabaseConnection, draft: AuditEventDraft): Promise<void> {
  const head = await connection.executeQuery<{ seq: number; hash: string }>(CompiledQuery.raw(
    `insert into audit_chain_heads as h (organization_id, seq, hash) values ($1, 0, '')
     on conflict (organization_id) do update set seq = h.seq returning seq, hash`,
    [draft.organizationId],
  ));
  const { seq: prevSeq, hash: prevHash } = head.rows[0];
  const row: ChainedFields = { ...draft, id: newId(), seq: Number(prevSeq) + 1, createdAt: new Date().toISOString() };
  const hash = chainHash(prevHash, row);
  await connection.executeQuery(CompiledQuery.raw(
    `with e as (
       insert into audit_events (id, organization_id, seq, created_at, actor_type, actor_id, api_key_id, action, resource_type, resource_id,
                                 outcome, status_code, error_code, request_id, ip, user_agent, diff, prev_hash, hash)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::jsonb, $18, $19))
     update audit_chain_heads set seq = $3, hash = $19 where organization_id = $2`,
    [row.id, row.organizationId, row.seq, row.createdAt, row.actorType, row.actorId, row.apiKeyId, row.action, row.resourceType, row.resourceId,
      row.outcome, row.statusCode, row.errorCode, row.requestId, row.ip, row.userAgent, row.diff === null || row.diff === undefined ? null : JSON.stringify(row.diff), prevHash, hash],
  ));
}
