import type { Logger } from '../platform/logger.ts';
import { checkCertificate, checkDomain, type DomainDeps } from './domain-checks.ts';
import { claimDueCertificate, claimDueDomain } from './domains.repo.ts';

/** How long a claimed check is this worker's: should it die meanwhile, another takes it up then. */
const LEASE_SECONDS = 300;
/** Checks one worker takes per tick, of each kind: a backlog is worked off over several ticks. */
const PER_TICK = 20;

/**
 * DomainPoller takes the due steps of domains and certificates (domain-checks.ts) in worker processes,
 * every PLINTH_DOMAIN_CHECK_INTERVAL_S: each due one is claimed by one worker, however many poll.
 */
export class DomainPoller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: DomainDeps,
    private readonly log: Logger,
  ) {}

  start(): void {
    const seconds = this.deps.domains.checkIntervalSeconds;
    if (seconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.checkDueOnce()
        .then(() => undefined)
        .catch((error) => this.log.warn({ err: error }, 'domain checks failed'))
        .finally(() => (this.running = undefined));
    }, seconds * 1000);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** checkDueOnce takes up to PER_TICK due domains and as many due certificates; returns how many. */
  async checkDueOnce(): Promise<number> {
    let done = 0;
    for (let i = 0; i < PER_TICK; i++) {
      const domain = await claimDueDomain(this.deps.db, LEASE_SECONDS);
      if (!domain) break;
      await this.safely(() => checkDomain(this.deps, domain), { domainId: domain.id });
      done++;
    }
    for (let i = 0; i < PER_TICK; i++) {
      const certificate = await claimDueCertificate(this.deps.db, LEASE_SECONDS);
      if (!certificate) break;
      await this.safely(() => checkCertificate(this.deps, certificate), { certificateId: certificate.id });
      done++;
    }
    return done;
  }

  /** One failing check does not stop the others; it is due again when its lease ends. */
  private async safely(check: () => Promise<void>, what: Record<string, string>) {
    try {
      await check();
    } catch (error) {
      this.log.warn({ ...what, err: { message: (error as Error).message } }, 'a domain check failed');
    }
  }
}
