import type { Logger } from '../../platform/logger.ts';
import { createSandbox } from './index.ts';
import { SandboxUnavailableError, type SandboxSettings, type StepSandbox, type StepWorkspace } from './sandbox.ts';
import { loadSandboxSettings } from './settings.ts';
import { workRootFrom } from '../../platform/work-dirs.ts';

/**
 * OnDemandSandbox is the sandbox of a process that must run a tenant's git without running steps: the
 * API, when it snapshots a code source. It is made and probed the first time a workspace is asked for
 * (concurrent first calls share that one start), from the same settings as a worker's, so the same
 * isolation, limits and outbound policy apply; it keeps no sandbox built ahead. It does not publish
 * its isolation to `GET /health`, which reports the steps' (a worker's).
 *
 * Its claims live beside the workers' in `<work root>/plinth-sandboxes`: a claim is an atomic `mkdir`
 * of a uid's directory, so no two claims of any processes share a uid, and a sweep removes only claims
 * whose owning process has exited (workspaces.ts), so neither this sandbox nor a worker's (in this
 * process under `plinth serve`, or another on the host) ever removes the other's live workspaces.
 */
export class OnDemandSandbox {
  private started: Promise<StepSandbox> | undefined;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly log: Logger,
    private readonly create: (settings: SandboxSettings) => StepSandbox = createSandbox,
  ) {}

  /** From the environment a worker reads (PLINTH_SANDBOX*, PLINTH_STEP_*, PLINTH_WORKER_WORK_ROOT), without a warm pool. */
  static fromEnv(env: NodeJS.ProcessEnv, log: Logger): OnDemandSandbox {
    const workRoot = workRootFrom(env);
    return new OnDemandSandbox({ ...loadSandboxSettings(env, workRoot, 0), poolSize: 0 }, log);
  }

  /** Where the Git caches are: the work root the workers of this host share. */
  get workRoot(): string | undefined {
    return this.settings.workRoot;
  }

  /** A fresh workspace; throws SandboxUnavailableError when this host cannot isolate and PLINTH_SANDBOX is not `off`. */
  async open(): Promise<StepWorkspace> {
    this.started ??= this.start();
    return (await this.started).open();
  }

  /** Releases the claims kept for reuse. */
  async close(): Promise<void> {
    const started = this.started;
    this.started = undefined;
    const sandbox = await started?.catch(() => undefined);
    await sandbox?.close();
  }

  // A failed start is kept, as a worker keeps its probe: the host does not change while the process runs.
  private async start(): Promise<StepSandbox> {
    const sandbox = this.create(this.settings);
    const report = await sandbox.start(this.log).catch((error: Error) => {
      // What failed names the host's paths and programs: its operator reads it in the log, a tenant does not.
      this.log.error({ err: error }, 'cannot start the sandbox of git processes');
      throw new SandboxUnavailableError('The sandbox of Git processes could not start on this host; its operator finds why in the log');
    });
    const fields = { isolation: report.mode, privileges: report.privileges, network: report.network, detail: report.detail };
    if (report.mode === 'unavailable') {
      this.log.error(fields, "cannot isolate this process's git processes: code source snapshots fail until the host can isolate or PLINTH_SANDBOX=off is set");
      throw new SandboxUnavailableError(
        `Git processes need isolation and this host has none (${report.detail}); an operator running a single tenant can set PLINTH_SANDBOX=off`,
      );
    }
    if (report.mode === 'off') this.log.warn(fields, 'NOT isolating the git processes of code source snapshots (PLINTH_SANDBOX=off)');
    else this.log.info(fields, 'isolating the git processes of code source snapshots');
    return sandbox;
  }
}
