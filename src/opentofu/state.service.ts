import { createHash } from 'node:crypto';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import { isUniqueViolation } from '../platform/db/db-errors.ts';
import { hasPermission } from '../platform/auth/roles.ts';
import { AppError, BadRequestError, ForbiddenError, NotFoundError } from '../platform/errors.ts';
import { textProblem } from '../platform/http/input-rules.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { recordRunNote } from './opentofu.repo.ts';
import { findStackById } from '../stacks/stacks.repo.ts';
import type { StateCaller } from './state-auth.ts';
import {
  deleteStateLock,
  findLatestStateVersion,
  findStateLock,
  findStateVersion,
  findStateVersionsPage,
  insertStateLock,
  insertStateVersion,
  lockStackForState,
  type StateLockRow,
  type StateVersionRow,
} from './state.repo.ts';
import type { StateLock, StateVersion } from './state.schema.ts';

/** The workspace name the API shows as a stack's `serviceStateBackendWorkspace`. */
const WORKSPACE = /^stack-([A-Za-z0-9_-]{1,64})$/;

export interface StateStack {
  id: string;
  organizationId: string;
}

const sealContext = (versionId: string) => `stack_state_versions.state:${versionId}`;

/**
 * resolveStateStack finds the stack a state workspace names, as the caller may see it: an API key reaches
 * its organization's stacks (another organization's is a 404, as everywhere). A run credential reaches
 * only its own stack: any other is a 403 (decided without looking, so it tells nothing of other stacks),
 * which OpenTofu reports as an error where a 404 would read as "no state".
 */
export async function resolveStateStack(db: Executor, caller: StateCaller, workspace: string): Promise<StateStack> {
  const id = WORKSPACE.exec(workspace)?.[1];
  if (!id) throw new NotFoundError('StateWorkspace', workspace);
  if (caller.kind === 'run') {
    if (caller.stackId !== id) throw new ForbiddenError(`This run credential is for stack-${caller.stackId} only`, 'OpenTofu:State:OTHER_STACK');
    return { id, organizationId: caller.organizationId };
  }
  const stack = await findStackById(db, caller.organizationId, id);
  if (!stack) throw new NotFoundError('StateWorkspace', workspace);
  return { id, organizationId: stack.organization_id };
}

/** readState returns the current state's bytes and MD5, or undefined when nothing was written yet. */
export async function readState(db: Executor, secrets: SecretBox, stack: StateStack): Promise<{ bytes: Buffer; md5: Buffer } | undefined> {
  const latest = await findLatestStateVersion(db, stack.id);
  if (!latest) return undefined;
  return { bytes: secrets.openBytes(latest.sealed_state, sealContext(latest.id)), md5: Buffer.from(latest.md5, 'hex') };
}

function parseJsonObject(body: Buffer, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BadRequestError(`The ${what} must be a JSON object`, [], 'OpenTofu:State:INVALID');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new BadRequestError(`The ${what} must be a JSON object`, [], 'OpenTofu:State:INVALID');
  return value as Record<string, unknown>;
}

/** The managed resource instances a state holds (its `resources`, OpenTofu's state format version 4). */
function resourceCount(state: Record<string, unknown>): number {
  const resources = Array.isArray(state.resources) ? state.resources : [];
  let count = 0;
  for (const r of resources) {
    if (r && typeof r === 'object' && (r as Record<string, unknown>).mode !== 'data') {
      const instances = (r as Record<string, unknown>).instances;
      count += Array.isArray(instances) ? instances.length : 0;
    }
  }
  return count;
}

/** The serial and lineage a state write must carry: OpenTofu's state file format, version 4. */
function stateHeader(body: Buffer): { serial: number; lineage: string; resources: number } {
  const state = parseJsonObject(body, 'state');
  const { serial, lineage } = state;
  if (typeof serial !== 'number' || !Number.isSafeInteger(serial) || serial < 0)
    throw new BadRequestError('The state has no valid serial', ['serial: must be a non-negative integer'], 'OpenTofu:State:INVALID');
  if (typeof lineage !== 'string' || lineage.length === 0 || lineage.length > 256)
    throw new BadRequestError('The state has no valid lineage', ['lineage: must be a non-empty string'], 'OpenTofu:State:INVALID');
  const problem = textProblem(lineage);
  if (problem) throw new BadRequestError('The state has no valid lineage', [`lineage: ${problem}`], 'OpenTofu:State:INVALID');
  return { serial, lineage, resources: resourceCount(state) };
}

/**
 * assertContentMd5 refuses a state whose bytes are not those the client hashed (OpenTofu sends
 * Content-MD5 with every write): a body cut or changed on its way is never kept as the stack's state.
 */
export function assertContentMd5(header: string | string[] | undefined, body: Buffer): void {
  if (header === undefined) return;
  const sent = typeof header === 'string' ? header.trim() : '';
  if (sent !== createHash('md5').update(body).digest('base64')) {
    throw new BadRequestError(
      'Content-MD5 does not match the body: the state was changed or cut on its way',
      ['headers/content-md5: does not match the body'],
      'OpenTofu:State:CHECKSUM_MISMATCH',
    );
  }
}

function stateConflict(reason: 'STALE_SERIAL' | 'LINEAGE_MISMATCH' | 'NOT_HELD', message: string): AppError {
  return new AppError(409, reason === 'NOT_HELD' ? 'OpenTofu:StateLock:NOT_HELD' : `OpenTofu:State:${reason}`, message);
}

/** The 423 a caller gets when another holds the lock: the holder's lock info, which OpenTofu prints. */
export class StateLockedError extends AppError {
  constructor(readonly holder: StateLockRow) {
    super(423, 'OpenTofu:StateLock:LOCKED', `The state is locked by ${holder.principal_id} (lock ${holder.lock_id})`);
  }
}

/** assertMayWrite refuses a write unless it comes under the lock it names (or, unlocked and naming none, without one). */
function assertMayWrite(lock: StateLockRow | undefined, lockId: string | undefined) {
  if (lock && lockId === lock.lock_id) return;
  if (lock) throw new StateLockedError(lock);
  if (lockId !== undefined) throw stateConflict('NOT_HELD', `Lock ${lockId} is not held on this state`);
}

/**
 * writeState keeps a new version of the stack's state. A write must hold the lock it names (?ID=); it is
 * refused with an older or equal serial, or another lineage, than the current state. The same bytes as the
 * current version are an idempotent success (OpenTofu retries a write whose answer it lost).
 */
export async function writeState(db: Db, secrets: SecretBox, caller: StateCaller, stack: StateStack, lockId: string | undefined, body: Buffer): Promise<void> {
  const { serial, lineage, resources } = stateHeader(body);
  const md5 = createHash('md5').update(body).digest('hex');
  try {
    await db.transaction().execute(async (trx) => {
      if (!(await lockStackForState(trx, stack.id))) throw new NotFoundError('StateWorkspace', `stack-${stack.id}`);
      assertMayWrite(await findStateLock(trx, stack.id), lockId);
      const latest = await findLatestStateVersion(trx, stack.id);
      if (latest && latest.md5 === md5 && latest.serial === serial) return;
      if (latest && latest.lineage !== lineage)
        throw stateConflict('LINEAGE_MISMATCH', `The state's lineage ${lineage} is not this stack's (${latest.lineage})`);
      if (latest && serial <= latest.serial) throw stateConflict('STALE_SERIAL', `Serial ${serial} is not newer than the current state's ${latest.serial}`);
      const id = newId();
      await insertStateVersion(trx, {
        id,
        organizationId: stack.organizationId,
        stackId: stack.id,
        serial,
        lineage,
        md5,
        sizeBytes: body.length,
        resourceCount: resources,
        sealedState: secrets.seal(body, sealContext(id)),
        runId: caller.kind === 'run' ? caller.runId : null,
        principalId: caller.principalId,
      });
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw stateConflict('STALE_SERIAL', `Serial ${serial} was written meanwhile`);
    throw error;
  }
}

/** Lock info is a few hundred bytes; anything much larger is not OpenTofu's. */
export const MAX_LOCK_INFO_BYTES = 64 * 1024;

function lockIdOf(body: Buffer): { id: string; info: string } {
  if (body.length > MAX_LOCK_INFO_BYTES)
    throw new BadRequestError(`The lock info must be at most ${MAX_LOCK_INFO_BYTES} bytes`, [], 'OpenTofu:StateLock:INVALID');
  const info = parseJsonObject(body, 'lock info');
  if (typeof info.ID !== 'string' || info.ID.length === 0 || info.ID.length > 256)
    throw new BadRequestError('The lock info has no ID', ['ID: must be a non-empty string'], 'OpenTofu:StateLock:INVALID');
  const problem = textProblem(info.ID);
  if (problem) throw new BadRequestError('The lock info has no valid ID', [`ID: ${problem}`], 'OpenTofu:StateLock:INVALID');
  return { id: info.ID, info: body.toString('utf8') };
}

/** lockState takes the state lock; taking it again with the same ID succeeds (a retried LOCK), another holder is a 423. */
export async function lockState(db: Db, caller: StateCaller, stack: StateStack, body: Buffer): Promise<void> {
  const { id, info } = lockIdOf(body);
  await db.transaction().execute(async (trx) => {
    if (!(await lockStackForState(trx, stack.id))) throw new NotFoundError('StateWorkspace', `stack-${stack.id}`);
    const held = await findStateLock(trx, stack.id);
    if (held && held.lock_id === id) return;
    if (held) throw new StateLockedError(held);
    await insertStateLock(trx, {
      stackId: stack.id,
      organizationId: stack.organizationId,
      lockId: id,
      info,
      runId: caller.kind === 'run' ? caller.runId : null,
      principalId: caller.principalId,
    });
  });
}

/**
 * unlockState releases the lock whose ID the body names. Another ID (or none) is a 423 whatever else the
 * body says. The holder's ID releases it for the holder (the principal that took it, or any credential of
 * the run that took it); anyone else needs `state:force-unlock` (`tofu force-unlock` by an ADMIN), and a
 * run that held it hears of it in its history. An unlocked state unlocks again (a retried UNLOCK).
 */
export async function unlockState(db: Db, caller: StateCaller, stack: StateStack, body: Buffer): Promise<void> {
  const id = body.length ? lockIdOf(body).id : undefined;
  await db.transaction().execute(async (trx) => {
    if (!(await lockStackForState(trx, stack.id))) throw new NotFoundError('StateWorkspace', `stack-${stack.id}`);
    const held = await findStateLock(trx, stack.id);
    if (!held) return;
    if (held.lock_id !== id) throw new StateLockedError(held);
    if (held.principal_id !== caller.principalId) {
      if (caller.kind !== 'key' || !hasPermission(caller.principal.role, 'state:force-unlock')) {
        throw new ForbiddenError(
          `Lock ${held.lock_id} is held by ${held.principal_id}: only its holder, or a caller with state:force-unlock (ADMIN and above), may release it`,
          'OpenTofu:StateLock:NOT_HOLDER',
          {
            holder: held.principal_id,
            permission: 'state:force-unlock',
          },
        );
      }
      if (held.run_id) await recordRunNote(trx, held.run_id, `state lock ${held.lock_id} force-unlocked by ${caller.principalId}`, caller.principalId);
    }
    await deleteStateLock(trx, stack.id);
  });
}

function versionRowToVersion(row: StateVersionRow): StateVersion {
  return {
    id: row.id,
    stackId: row.stack_id,
    serial: row.serial,
    lineage: row.lineage,
    md5: row.md5,
    sizeBytes: row.size_bytes,
    principalId: row.principal_id,
    createdAt: row.created_at,
    ...(row.run_id ? { runId: row.run_id } : {}),
  };
}

function lockRowToLock(row: StateLockRow): StateLock {
  let info: Record<string, unknown> = {};
  try {
    info = JSON.parse(row.info) as Record<string, unknown>;
  } catch {
    // Stored only after it parsed; nothing to show otherwise.
  }
  return { id: row.lock_id, info, principalId: row.principal_id, createdAt: row.created_at, ...(row.run_id ? { runId: row.run_id } : {}) };
}

async function stackOf(db: Executor, principal: Principal, stackId: string): Promise<StateStack> {
  const stack = await findStackById(db, principal.organizationId, stackId);
  if (!stack) throw new NotFoundError('Stack', stackId);
  return { id: stack.id, organizationId: stack.organization_id };
}

export async function listStateVersions(db: Db, principal: Principal, stackId: string, page: PageRequest) {
  await stackOf(db, principal, stackId);
  const { items, meta } = toPage(await findStateVersionsPage(db, stackId, page), page, (r) => r.id);
  return { items: items.map(versionRowToVersion), meta };
}

/** getStateVersion returns one version with its state (which holds secrets: the route asks for state:read). */
export async function getStateVersion(db: Db, secrets: SecretBox, principal: Principal, stackId: string, versionId: string) {
  await stackOf(db, principal, stackId);
  const row = await findStateVersion(db, stackId, versionId);
  if (!row) throw new NotFoundError('StateVersion', versionId);
  const state = JSON.parse(secrets.open(row.sealed_state, sealContext(row.id))) as Record<string, unknown>;
  return { ...versionRowToVersion(row), state };
}

export async function getStateLock(db: Db, principal: Principal, stackId: string) {
  await stackOf(db, principal, stackId);
  const held = await findStateLock(db, stackId);
  return held ? { locked: true, lock: lockRowToLock(held) } : { locked: false };
}

/**
 * forceUnlockState releases whoever holds the stack's state lock (an ADMIN's remedy for a lock left by a
 * lost process) and says so in the history of the run that held it, if a run did.
 */
export async function forceUnlockState(db: Db, principal: Principal, stackId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const stack = await stackOf(trx, principal, stackId);
    await lockStackForState(trx, stack.id);
    const held = await findStateLock(trx, stack.id);
    if (!held) return;
    await deleteStateLock(trx, stack.id);
    if (held.run_id) await recordRunNote(trx, held.run_id, `state lock ${held.lock_id} force-unlocked by ${principal.userId}`, principal.userId);
  });
}
