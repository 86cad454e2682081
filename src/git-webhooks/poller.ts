import type { Db } from '../platform/db/db.ts';
import type { GitConfig } from '../platform/git-config.ts';
import type { Logger } from '../platform/logger.ts';
import { Every } from '../platform/every.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findCodeSourceById } from '../code-sources/code-sources.repo.ts';
import { gitCredential } from '../code-sources/credentials.ts';
import { listRemoteBranches } from '../code-sources/remote-branches.ts';
import { triggerStackRunsForPush } from '../stacks/stacks.service.ts';
import { advancePollHead, findTrackedBranches, insertDelivery, setDeliveryRuns } from './webhooks.repo.ts';

/**
 * How many sources one poller lists at once: a stalling server (up to PLINTH_GIT_TIMEOUT_MS) takes one
 * lane while the others go on, and a listing holds up to 16 MiB, so they are not all listed at once.
 */
const POLLS_AT_ONCE = 4;

/**
 * GitPoller is the webhook for sources that cannot send one (PLINTH_GIT_POLL_INTERVAL_S, off by
 * default; it runs in worker processes). Every interval it lists the branches of each code source some
 * stack tracks, and a head that moved since the last poll triggers what a push would: runs at the new
 * commit, through the same path, once however many workers poll. A poll cannot tell which paths changed
 * nor who pushed: every stack tracking the branch runs, and the description says the poller found it.
 */
export class GitPoller {
  private readonly every: Every;
  private stopping = false;

  constructor(
    private readonly db: Db,
    private readonly secrets: SecretBox,
    private readonly git: GitConfig,
    private readonly log: Logger,
    private readonly sourcesPerPage = 200,
  ) {
    this.every = new Every(git.pollIntervalSeconds * 1000, () => this.pollOnce(), log, 'git poll failed');
  }

  start(): void {
    if (this.git.pollIntervalSeconds <= 0) return;
    this.stopping = false;
    this.every.start();
    this.log.info({ intervalSeconds: this.git.pollIntervalSeconds }, 'polling tracked Git branches');
  }

  /** Waits only for the listings under way: a pass in progress takes no further source. */
  stop(): Promise<void> {
    this.stopping = true;
    return this.every.stop();
  }

  /**
   * pollOnce looks at every tracked branch once, a page of code sources at a time, listing up to
   * POLLS_AT_ONCE sources at once; returns the ids of the runs it triggered.
   */
  async pollOnce(): Promise<string[]> {
    const runIds: string[] = [];
    for (let after = ''; ; ) {
      const bySource = new Map<string, string[]>();
      for (const t of await findTrackedBranches(this.db, after, this.sourcesPerPage)) {
        bySource.set(t.code_source_id, [...(bySource.get(t.code_source_id) ?? []), t.branch]);
      }
      const sources = [...bySource];
      await forEachAtMost(sources, POLLS_AT_ONCE, async ([codeSourceId, branches]) => {
        if (this.stopping) return;
        try {
          runIds.push(...(await this.pollSource(codeSourceId, branches)));
        } catch (error) {
          // One unreachable repository does not stop the others; its error names no secret.
          this.log.warn({ codeSourceId, err: { message: (error as Error).message } }, 'could not poll a code source');
        }
      });
      if (sources.length < this.sourcesPerPage || this.stopping) return runIds;
      after = sources[sources.length - 1][0];
    }
  }

  private async pollSource(codeSourceId: string, branches: string[]): Promise<string[]> {
    const source = await findCodeSourceById(this.db, codeSourceId);
    if (!source) return [];
    const heads = await listRemoteBranches(
      source.url,
      await gitCredential(this.db, this.secrets, this.git, source),
      this.git.remoteTimeoutMs,
      this.git.outbound,
    );
    const runIds: string[] = [];
    for (const branch of branches) {
      const head = heads.find((h) => h.name === branch);
      if (!head) continue;
      const deliveryId = `poll:${branch}:${head.commitSha}`.slice(0, 200);
      runIds.push(
        ...(await this.db.transaction().execute(async (trx) => {
          if (!(await advancePollHead(trx, source.id, branch, head.commitSha))) return [];
          if (!(await insertDelivery(trx, { codeSourceId: source.id, deliveryId, provider: 'GENERIC', commitSha: head.commitSha }))) return [];
          const triggered = await triggerStackRunsForPush(trx, {
            organizationId: source.organization_id,
            codeSourceId: source.id,
            branch,
            commitSha: head.commitSha,
            author: 'an unknown author (found by the poller)',
            message: '',
            deliveryId,
            provider: 'POLL',
            touches: () => true,
          });
          await setDeliveryRuns(trx, source.id, deliveryId, triggered);
          return triggered;
        })),
      );
    }
    return runIds;
  }
}

/** forEachAtMost runs `work` on every item, at most `atOnce` of them at a time. */
async function forEachAtMost<T>(items: readonly T[], atOnce: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, lane));
}
