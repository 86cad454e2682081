import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadEngineConfig, type EngineConfig } from '../../src/engine/engine-config.ts';
import { installQueue } from '../../src/engine/queue.ts';
import { SPAWNER_COMM } from '../../src/engine/sandbox/spawner.ts';
import { EngineWorker } from '../../src/engine/worker.ts';
import { OPENTOFU_RUNNERS } from '../../src/opentofu/opentofu-step.ts';
import { startTestApp, TEST_SECRETS, type TestApp, type TestAppOptions } from './app.ts';

/** Timings that keep engine tests in seconds; the defaults (docs/engine.md) are for production. */
export const FAST_ENGINE_ENV: Record<string, string> = {
  PLINTH_WORKER_LEASE_MS: '2000',
  PLINTH_WORKER_HEARTBEAT_MS: '300',
  PLINTH_WORKER_REAP_MS: '300',
  PLINTH_WORKER_REDISPATCH_MS: '4000',
  PLINTH_WORKER_POLL_MS: '500',
  PLINTH_WORKER_KILL_GRACE_MS: '1000',
  PLINTH_WORKER_TERM_GRACE_MS: '1000',
  // A run meeting a lock held by someone else fails after this wait; the default waits two minutes.
  PLINTH_TOFU_LOCK_TIMEOUT_MS: '5000',
  PLINTH_WORKER_CONCURRENCY: '8',
  // Two warm sandboxes still exercise the pool; one per slot would cost CPU at every worker start of every test file.
  PLINTH_SANDBOX_POOL: '2',
};

/**
 * The tests' Git server listens on loopback, as a self-hosted Git server on the worker host would: its
 * operator allows it to steps, which the egress policy otherwise refuses (docs/sandbox.md).
 */
export const LOOPBACK_GIT_ENV: Record<string, string> = { PLINTH_STEP_EGRESS_ALLOW: '127.0.0.1' };

const silent = pino({ level: process.env.ENGINE_TEST_LOG ?? 'silent' });

export interface EngineTestApp extends TestApp {
  workers: EngineWorker[];
  startWorker(overrides?: Partial<EngineConfig>): Promise<EngineWorker>;
}

/** isAlive tells whether a process id still names a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return true;
}

/** startEngineTestApp is startTestApp plus the queue schema and in-process workers stopped (and leak-checked) by close(). */
export async function startEngineTestApp(options: TestAppOptions = {}): Promise<EngineTestApp> {
  const t = await startTestApp(options);
  await installQueue(t.database.url, silent);
  const workers: EngineWorker[] = [];
  const startWorker = async (overrides: Partial<EngineConfig> = {}) => {
    const worker = new EngineWorker(
      t.db,
      t.database.url,
      { ...loadEngineConfig(FAST_ENGINE_ENV), runners: OPENTOFU_RUNNERS, ...overrides },
      silent,
      TEST_SECRETS,
      `test-worker-${workers.length + 1}`,
    );
    await worker.start();
    workers.push(worker);
    return worker;
  };
  return {
    ...t,
    workers,
    startWorker,
    close: async () => {
      for (const w of workers) await w.stop();
      const leaked = workers.flatMap((w) => w.spawnedPids).filter(isAlive);
      await t.close();
      assert.deepEqual(leaked, [], `processes left running by the engine: ${leaked.join(', ')}`);
    },
  };
}

/** waitFor polls until `probe` returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

export interface StepSpec {
  id: string;
  type?: string;
  command?: string;
  needs?: string[];
  retry?: { maxAttempts: number };
  timeoutSeconds?: number;
  /** An approval step's message to its approver. */
  message?: string;
}

/** A pipeline config from short step specs: script steps unless a type is given. */
export function pipelineConfig(steps: StepSpec[]) {
  return {
    steps: steps.map((s) => ({
      id: s.id,
      name: s.id,
      type: s.type ?? 'script',
      ...(s.needs ? { needs: s.needs } : {}),
      ...((s.type ?? 'script') === 'script' ? { with: { command: s.command ?? 'true' } } : {}),
      ...(s.message ? { with: { message: s.message } } : {}),
      ...(s.retry ? { retry: s.retry } : {}),
      ...(s.timeoutSeconds ? { timeoutSeconds: s.timeoutSeconds } : {}),
    })),
  };
}

let counter = 0;

/** createStack makes a project, an environment and a stack whose change pipeline is `steps`; returns the stack. */
export async function createStack(t: TestApp, steps: StepSpec[], token?: string): Promise<{ id: string; changePipelineId: string }> {
  const n = ++counter;
  const project = await t.call('POST', '/projects', { token, body: { data: { givenId: `p${n}-${process.pid}`, name: `Project ${n}` } } });
  assert.equal(project.status, 201, JSON.stringify(project.body));
  const env = await t.call('POST', '/environments', { token, body: { data: { projectId: project.body.data.id, givenId: `e${n}`, name: `Env ${n}` } } });
  assert.equal(env.status, 201, JSON.stringify(env.body));
  const stack = await t.call('POST', '/stacks', {
    token,
    body: { data: { projectId: project.body.data.id, environmentId: env.body.data.id, name: `Stack ${n}`, pipelines: { change: pipelineConfig(steps) } } },
  });
  assert.equal(stack.status, 201, JSON.stringify(stack.body));
  return stack.body.data;
}

export async function triggerRun(t: TestApp, stackId: string, data: Record<string, unknown> = {}, token?: string) {
  const res = await t.call('POST', `/stacks/${stackId}/pipeline-run`, { token, body: { data } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

export async function getRun(t: TestApp, runId: string) {
  return (await t.call('GET', `/pipeline-runs/${runId}`)).body.data;
}

export async function stepsOf(t: TestApp, runId: string, token?: string): Promise<any[]> {
  return (await t.call('GET', `/pipeline-runs/${runId}/step-executions?limit=200`, { token })).body.data;
}

/** waitForRunStatus waits until the run reaches `status` and returns it. */
export function waitForRunStatus(t: TestApp, runId: string, status: string, timeoutMs?: number) {
  return waitFor(
    `run ${runId} to be ${status}`,
    async () => {
      const run = await getRun(t, runId);
      return run.status === status ? run : undefined;
    },
    timeoutMs,
  );
}

export function waitForStep(t: TestApp, runId: string, stepId: string, status: string, timeoutMs?: number) {
  return waitFor(
    `step ${stepId} of run ${runId} to be ${status}`,
    async () => (await stepsOf(t, runId)).find((s) => s.stepId === stepId && s.status === status),
    timeoutMs,
  );
}

/** logLines returns the stored output lines of a step execution (up to 1000). */
export async function logLines(t: TestApp, executionId: string, token?: string): Promise<string[]> {
  const res = await t.call('GET', `/pipeline-step-executions/${executionId}/logs?limit=1000`, { token });
  return res.body.data.map((l: { line: string }) => l.line);
}

/** waitForLine waits until a step execution has logged a line matching `pattern`. */
export function waitForLine(t: TestApp, executionId: string, pattern: RegExp, timeoutMs?: number, token?: string): Promise<string> {
  return waitFor(
    `a line matching ${pattern} from step execution ${executionId}`,
    async () => (await logLines(t, executionId, token)).find((l) => pattern.test(l)),
    timeoutMs,
  );
}

interface HostProcess {
  pid: number;
  ppid: number;
  comm: string;
  uid: number;
}

/** hostProcesses lists every process of the host as the host sees it. */
export function hostProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))![1]);
      found.push({ pid: Number(entry), ppid, comm, uid });
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

/** processTree returns `pid` and every live descendant of it, as host pids. */
export function processTree(pid: number): number[] {
  const all = hostProcesses();
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const p of all) if (p.ppid === tree[i]) tree.push(p.pid);
  return tree.filter(isAlive);
}

/**
 * stepProcessesOf returns the host pids of every step process a worker process has running: its
 * sandboxes and all they hold, started by the worker or by its spawner (a child of the worker).
 */
export function stepProcessesOf(workerPid: number): number[] {
  const comms = new Map(hostProcesses().map((p) => [p.pid, p.comm]));
  return processTree(workerPid).filter((pid) => pid !== workerPid && comms.get(pid) !== SPAWNER_COMM);
}

/** The worker's spawner (spawner.ts): its child of that name, when it has started one. */
export function spawnerOf(workerPid: number): number | undefined {
  return hostProcesses().find((p) => p.ppid === workerPid && p.comm === SPAWNER_COMM)?.pid;
}

export function tempDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'plinth-engine-test-'));
}

/**
 * spawnWorkerProcess starts `plinth worker` as a real process against the test database. With
 * `inheritedDescriptor`, it also gets an open pipe at fd 7 (not close-on-exec), as a service started
 * from a shell inherits that shell's descriptors.
 */
export function spawnWorkerProcess(t: TestApp, env: Record<string, string> = {}, { inheritedDescriptor = false } = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'worker'], {
    env: {
      ...process.env,
      ...FAST_ENGINE_ENV,
      ...env,
      DATABASE_URL: t.database.url,
      PLINTH_ADMIN_TOKEN: t.adminToken,
      PLINTH_DATA_DIR: tempDir(),
      LOG_LEVEL: process.env.ENGINE_TEST_LOG ?? 'warn',
    },
    stdio: inheritedDescriptor ? ['ignore', 'inherit', 'inherit', 'ignore', 'ignore', 'ignore', 'ignore', 'pipe'] : ['ignore', 'inherit', 'inherit'],
  });
}
