// The organizations' share of the worker slots (docs/engine.md#organizations-share-the-workers): the
// steps of one organization hold at most PLINTH_ORG_MAX_RUNNING_STEPS slots at once, on all workers
// together, so one organization queueing hundreds of long steps cannot hold every slot while the others
// wait.
//
// A slot is held from a step's claim until its process has ended (a cancelled step's process may take
// its kill grace to stop), renewed by its worker's heartbeat. The claim keeps the limit: it counts the
// organization's held slots under a lock that orders the organization's claims, and defers the claim
// when they are all taken. The workers also skip the jobs of full organizations when they fetch one
// (graphile-worker's forbidden flags), so a waiting step is not claimed over and over.

import type { Db, Executor } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import { ORGANIZATION_FLAG_PREFIX } from './executions.repo.ts';
import { countHeldSlots, findFullOrganizations, lockRunOfClaim } from './organization-slots.repo.ts';

export const DEFAULT_ORG_MAX_RUNNING_STEPS = 8;

/** How stale a worker's list of full organizations may be: a slot that frees is seen within this, plus the poll interval. */
const FULL_ORGANIZATIONS_REFRESH_MS = 500;

export interface ClaimSlots {
  /** The run's organization. */
  organizationId: string;
  /** Slots its steps hold, this claim's not counted. */
  held: number;
}

/**
 * slotsOfClaim locks the run, as every command does first, then counts the slots its organization's
 * steps hold under a lock that orders the organization's claims until the transaction ends: two
 * claims cannot both take its last slot. Undefined when there is no such run.
 */
export async function slotsOfClaim(trx: Executor, runId: string): Promise<ClaimSlots | undefined> {
  const organizationId = await lockRunOfClaim(trx, runId);
  return organizationId === undefined ? undefined : { organizationId, held: await countHeldSlots(trx, organizationId) };
}

/**
 * FullOrganizationFlags is what a worker tells graphile-worker to skip before each job it fetches: the
 * flags of the organizations at their limit, read at most every FULL_ORGANIZATIONS_REFRESH_MS and
 * shared by the worker's slots. A claim that finds an organization full, or fills it, marks it at once,
 * so the worker's next fetch skips its jobs without waiting for the next read. A stale list costs
 * little: a job taken too early is deferred by its claim, and one skipped too long is taken at the next
 * poll.
 */
export class FullOrganizationFlags {
  private flags: string[] = [];
  private readAtMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<string[]> | undefined;

  constructor(
    private readonly db: Db,
    private readonly limit: number,
    private readonly log: Logger,
  ) {}

  readonly current = (): string[] | Promise<string[]> => {
    if (performance.now() - this.readAtMs < FULL_ORGANIZATIONS_REFRESH_MS) return this.flags;
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  };

  /** The organization's steps hold all its slots, as a claim just found: skip its jobs until the next read. */
  markFull(organizationId: string): void {
    const flag = ORGANIZATION_FLAG_PREFIX + organizationId;
    if (!this.flags.includes(flag)) this.flags = [...this.flags, flag];
  }

  private async read(): Promise<string[]> {
    try {
      const full = await findFullOrganizations(this.db, this.limit);
      this.flags = full.map((id) => ORGANIZATION_FLAG_PREFIX + id);
      this.readAtMs = performance.now();
    } catch (err) {
      // The job fetch that follows meets the same fault; the claims keep the limit meanwhile.
      this.log.debug({ err }, 'could not read which organizations hold all their worker slots');
    }
    return this.flags;
  }
}
