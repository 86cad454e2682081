// The organizations' share of the worker slots (docs/engine.md#organizations-share-the-workers): at
// most PLINTH_ORG_MAX_RUNNING_STEPS steps of one organization run at once, on all workers together, so
// one tenant queueing hundreds of long steps cannot hold every slot while the others wait.
//
// The limit is kept by the claim: it counts the organization's running steps under a lock that orders
// the organization's claims, and defers the claim when it is full. The workers also skip the jobs of
// full organizations when they fetch one (graphile-worker's forbidden flags), so a deferred step costs
// no work while it waits.

import type { Db, Executor } from '../platform/db/db.ts';
import type { Logger } from '../platform/logger.ts';
import { ORGANIZATION_FLAG_PREFIX } from './executions.repo.ts';
import { countRunningSteps, findFullOrganizations, lockOrganizationSlots } from './organization-slots.repo.ts';

export const DEFAULT_ORG_MAX_RUNNING_STEPS = 8;

/** How stale the list of full organizations a worker skips may be: a slot that frees is seen within this, plus the poll interval. */
const FULL_ORGANIZATIONS_REFRESH_MS = 500;

/**
 * organizationIsFull says, in a claim's transaction, whether the execution's organization already
 * runs `limit` steps. The lock it takes orders the organization's claims until the transaction ends,
 * so two claims cannot both take its last slot.
 */
export async function organizationIsFull(trx: Executor, executionId: string, limit: number): Promise<boolean> {
  const organizationId = await lockOrganizationSlots(trx, executionId);
  return organizationId !== undefined && (await countRunningSteps(trx, organizationId)) >= limit;
}

/**
 * FullOrganizationFlags is what a worker tells graphile-worker to skip before each job it fetches: the
 * flags of the organizations at their limit, read at most every FULL_ORGANIZATIONS_REFRESH_MS and
 * shared by the worker's slots. A stale list costs little: a job taken too early is deferred by its
 * claim, and one skipped too long is taken at the next poll.
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

  private async read(): Promise<string[]> {
    try {
      const full = await findFullOrganizations(this.db, this.limit);
      this.flags = full.map((id) => ORGANIZATION_FLAG_PREFIX + id);
      this.readAtMs = performance.now();
    } catch (err) {
      // The job fetch that follows meets the same fault; the claims keep the limit meanwhile.
      this.log.debug({ err }, 'could not read which organizations run as many steps as they may');
    }
    return this.flags;
  }
}
