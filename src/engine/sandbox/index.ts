import type { Logger } from '../../platform/logger.ts';
import { NamespaceSandbox } from './namespaces.ts';
import type { IsolationReport, SandboxSettings, StepSandbox } from './sandbox.ts';
import { UnisolatedSandbox } from './unisolated.ts';

export type { IsolationReport, SandboxSettings, StepBind, StepProcessSpec, StepSandbox, StepWorkspace } from './sandbox.ts';
export { SandboxUnavailableError } from './sandbox.ts';

/**
 * createSandbox picks the mechanism `PLINTH_SANDBOX` asks for: `off` runs steps unisolated (the
 * single-tenant opt-out); `auto` and `namespaces` use Linux namespaces, and differ only when the host
 * cannot isolate: `auto` then refuses script steps, `namespaces` refuses to start the worker.
 */
export function createSandbox(settings: SandboxSettings): StepSandbox {
  return settings.mode === 'off' ? new UnisolatedSandbox(settings) : new NamespaceSandbox(settings);
}

const NO_WORKER: IsolationReport = {
  mode: 'no-worker',
  requested: null,
  privileges: null,
  network: null,
  cgroup: null,
  limits: { maxProcesses: null, memoryMb: null, cpus: null },
  detail: 'this process runs no worker: steps run in `plinth worker` (or `plinth serve`) processes, each of which reports its own isolation',
};

let published: IsolationReport = NO_WORKER;

/** The isolation of the steps this process runs, as `GET /health` reports it (probed once, at worker start). */
export function currentIsolation(): IsolationReport {
  return published;
}

/**
 * startSandbox probes the sandbox once, logs which isolation is active (loudly when there is none) and
 * publishes it for `GET /health`. It throws when `PLINTH_SANDBOX=namespaces` cannot be had.
 */
export async function startSandbox(sandbox: StepSandbox, log: Logger): Promise<IsolationReport> {
  const report = await sandbox.start(log);
  published = report;
  const fields = {
    isolation: report.mode,
    privileges: report.privileges,
    network: report.network,
    cgroup: report.cgroup,
    limits: report.limits,
    detail: report.detail,
  };
  if (report.mode === 'namespaces') log.info(fields, 'isolating steps');
  else if (report.mode === 'off')
    log.warn(fields, 'NOT isolating steps (PLINTH_SANDBOX=off): every step can read what this worker can; use only when one tenant runs all pipelines');
  else
    log.error(
      fields,
      'cannot isolate steps on this host: script steps will fail with Engine:Sandbox:UNAVAILABLE until the host can isolate or PLINTH_SANDBOX=off is set',
    );
  return report;
}
