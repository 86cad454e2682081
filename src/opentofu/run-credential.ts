import { randomBytes } from 'node:crypto';
import { hashToken, RUN_TOKEN_PREFIX } from '../platform/auth/tokens.ts';
import type { Executor } from '../platform/db/db.ts';
import { newId } from '../platform/ids.ts';
import { deleteRunCredential, insertRunCredential } from './opentofu.repo.ts';

/** A run credential outlives its step by at most this much beyond the step's own time limit. */
const CREDENTIAL_MARGIN_MS = 5 * 60_000;

export interface RunCredential {
  token: string;
  revoke(): Promise<void>;
}

/**
 * mintRunCredential makes the token one OpenTofu step uses against its own stack's state: random, stored
 * only as its hash, valid until the step's time limit (plus a margin) and only while its run is not
 * finished. The step revokes it when it ends; a worker that dies leaves it to its expiry and its run's end.
 */
export async function mintRunCredential(
  db: Executor,
  v: { organizationId: string; stackId: string; runId: string; stepExecutionId: string; timeoutMs: number },
): Promise<RunCredential> {
  const token = RUN_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const id = newId();
  await insertRunCredential(db, {
    id,
    tokenHash: hashToken(token),
    organizationId: v.organizationId,
    stackId: v.stackId,
    runId: v.runId,
    stepExecutionId: v.stepExecutionId,
    ttlMs: v.timeoutMs + CREDENTIAL_MARGIN_MS,
  });
  return { token, revoke: () => deleteRunCredential(db, id) };
}
