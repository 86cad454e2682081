import { CompiledQuery, type QueryResult } from 'kysely';
import { newId } from '../ids.ts';
import type { SecretBox } from '../secrets/secret-box.ts';
import { anchorHolds, anchorOf, type ChainHead } from './anchor.ts';
import { chainHash, type ChainedFields } from './chain.ts';

/** An audit row before the chain gives it its sequence number and hashes. */
export type AuditEventDraft = Omit<ChainedFields, 'id' | 'seq' | 'createdAt'>;

/** What runs a statement inside the caller's open transaction: its connection, or a Kysely transaction. */
export interface StatementRunner {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

/** A chain head as stored: the newest row's seq and hash, and the anchor vouching for them. */
export interface StoredHead extends ChainHead {
  anchor: string | null;
}

async function findHeadForUpdate(runner: StatementRunner, organizationId: string): Promise<StoredHead | undefined> {
  const query = CompiledQuery.raw('select seq, hash, mac from audit_chain_heads where organization_id = $1 for update', [organizationId]);
  const { rows } = await runner.executeQuery(query as CompiledQuery<{ seq: number; hash: string; mac: string | null }>);
  return rows[0] && { organizationId, seq: rows[0].seq, hash: rows[0].hash, anchor: rows[0].mac };
}

/**
 * lockChainHead locks an organization's chain head until the caller's transaction ends, creating it,
 * anchored, before the organization's first row. Its row lock serializes the appends of one
 * organization, so no two rows share a sequence number or a previous hash.
 */
export async function lockChainHead(runner: StatementRunner, secrets: SecretBox, organizationId: string): Promise<StoredHead> {
  const found = await findHeadForUpdate(runner, organizationId);
  if (found) return found;
  const first: ChainHead = { organizationId, seq: 0, hash: '' };
  await runner.executeQuery(
    CompiledQuery.raw(`insert into audit_chain_heads (organization_id, seq, hash, mac) values ($1, 0, '', $2) on conflict (organization_id) do nothing`, [
      organizationId,
      anchorOf(secrets, first),
    ]),
  );
  const created = await findHeadForUpdate(runner, organizationId);
  if (!created) throw new Error(`audit chain head of ${organizationId} is missing`);
  return created;
}

/** setChainAnchor moves a locked head's anchor (a rotated key's anchor onto the current key). */
export async function setChainAnchor(runner: StatementRunner, head: ChainHead, anchor: string): Promise<void> {
  await runner.executeQuery(
    CompiledQuery.raw('update audit_chain_heads set mac = $3 where organization_id = $1 and seq = $2', [head.organizationId, head.seq, anchor]),
  );
}

/**
 * appendAuditEvent appends one row to its organization's chain inside the caller's open transaction
 * (run just before its COMMIT, so the head's lock is held only that long): it locks the head, inserts
 * the row hashed onto it, and moves the head and its anchor onto the row, in two statements.
 *
 * A head whose anchor does not hold was rewritten outside Plinth (its chain cut short, say): the row
 * is appended, but the anchor is left where it was, so that verification keeps showing the break
 * instead of this append vouching for it. `anchored` is false then.
 */
export async function appendAuditEvent(
  runner: StatementRunner,
  secrets: SecretBox,
  draft: AuditEventDraft,
  createdAt = new Date(),
): Promise<{ anchored: boolean }> {
  const head = await lockChainHead(runner, secrets, draft.organizationId);
  const row: ChainedFields = { ...draft, id: newId(), seq: head.seq + 1, createdAt: createdAt.toISOString() };
  const hash = chainHash(head.hash, row);
  const anchored = anchorHolds(secrets, head, head.anchor);
  const anchor = anchored ? anchorOf(secrets, { organizationId: row.organizationId, seq: row.seq, hash }) : head.anchor;
  await runner.executeQuery(
    CompiledQuery.raw(
      `with e as (
       insert into audit_events (id, organization_id, seq, created_at, actor_type, actor_id, api_key_id, action, resource_type, resource_id,
                                 outcome, status_code, error_code, request_id, ip, user_agent, diff, prev_hash, hash)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17::jsonb, $18, $19))
     update audit_chain_heads set seq = $3, hash = $19, mac = $20 where organization_id = $2`,
      [
        row.id,
        row.organizationId,
        row.seq,
        row.createdAt,
        row.actorType,
        row.actorId,
        row.apiKeyId,
        row.action,
        row.resourceType,
        row.resourceId,
        row.outcome,
        row.statusCode,
        row.errorCode,
        row.requestId,
        row.ip,
        row.userAgent,
        row.diff === null || row.diff === undefined ? null : JSON.stringify(row.diff),
        head.hash,
        hash,
        anchor,
      ],
    ),
  );
  return { anchored };
}
