import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LogSink } from '../log-sink.ts';
import { captureOutput } from './output-capture.ts';

export interface ScriptOptions {
  command: string;
  env: Record<string, string>;
  workingDirectory?: string;
  timeoutMs?: number;
  killGraceMs: number;
  workRoot?: string;
  sink: LogSink;
  /** Aborted when the engine wants the process gone (cancel, lost lease, drain). */
  signal: AbortSignal;
  onSpawn?: (pid: number) => void;
}

export interface ScriptResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stopped: boolean;
  /** Wall time of the process itself, spawn to exit: the engine's overhead is the rest of the step. */
  processMs: number;
  /** Making the working directory, and removing it afterwards: engine time, reported for the benchmark. */
  prepareMs?: number;
  cleanupMs?: number;
  spawnError?: string;
}

/**
 * The step runs under this wrapper. A guard in the step's own process group blocks reading a pipe whose
 * other end only the worker holds; should the worker die (even by SIGKILL) the kernel closes that end,
 * the guard reads end-of-file and kills the whole group, so no step process outlives its worker. The
 * guard ignores SIGTERM so that it still stands while a stopped step has its grace period, and it keeps
 * away from stdout and stderr, so it never holds the log pipes open. `exec` keeps the group leader's pid.
 */
const GUARDED_SHELL = [
  'exec 3<&0',
  "(trap '' TERM; while read -r _; do :; done; kill -KILL 0) <&3 >/dev/null 2>&1 &",
  'exec 3<&-',
  'exec sh -c "$1" </dev/null',
].join('\n');

/** Signals the whole process group: `sh -c` forks, and its children must go with it. */
function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/**
 * runScript runs `sh -c <command>` in a fresh temporary working directory, in its own process group,
 * streaming stdout and stderr byte for byte into the sink. It stops the group (SIGTERM, then SIGKILL
 * after the grace period) on timeout or when `signal` aborts, and removes the directory afterwards.
 */
export async function runScript(o: ScriptOptions): Promise<ScriptResult> {
  const started = performance.now();
  const workDir = await mkdtemp(path.join(o.workRoot ?? os.tmpdir(), 'plinth-step-'));
  let result: ScriptResult | undefined;
  try {
    const cwd = o.workingDirectory ? path.join(workDir, o.workingDirectory) : workDir;
    if (o.workingDirectory) await mkdir(cwd, { recursive: true });
    const prepareMs = performance.now() - started;
    result = { ...(await runInDirectory(o, cwd)), prepareMs };
    return result;
  } finally {
    const cleanupStarted = performance.now();
    await removeDirectory(workDir);
    if (result) result.cleanupMs = performance.now() - cleanupStarted;
  }
}

/** One syscall for the common empty directory; the recursive walk only when the step left files. */
async function removeDirectory(dir: string) {
  try {
    await rmdir(dir);
  } catch {
    await rm(dir, { recursive: true, force: true });
  }
}

function runInDirectory(o: ScriptOptions, cwd: string): Promise<ScriptResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    let processMs = 0;
    let timedOut = false;
    let stopped = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    const child = spawn('sh', ['-c', GUARDED_SHELL, 'plinth-step', o.command], { cwd, env: { ...o.env, PWD: cwd }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    // Nothing is ever written: the pipe exists only to close when this process dies.
    child.stdin!.on('error', () => {});
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (!child.pid || killTimer) return;
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), o.killGraceMs);
    };
    const onAbort = () => {
      stopped = true;
      stop();
    };
    const timeout = o.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          stop();
        }, o.timeoutMs)
      : undefined;
    const finish = (result: ScriptResult) => {
      if (timeout) clearTimeout(timeout);
      if (killTimer) clearTimeout(killTimer);
      o.signal.removeEventListener('abort', onAbort);
      // Whatever the shell left behind in its group goes too (the guard included): a step leaves no process running.
      if (child.pid) killGroup(child.pid, 'SIGKILL');
      child.stdin!.destroy();
      resolve(result);
    };
    child.on('error', (error) => finish({ exitCode: null, signal: null, timedOut, stopped, processMs: performance.now() - started, spawnError: error.message }));
    if (child.pid) o.onSpawn?.(child.pid);
    if (o.signal.aborted) onAbort();
    else o.signal.addEventListener('abort', onAbort);
    // As bytes, with backpressure and the log limits (output-capture.ts).
    captureOutput(child.stdout!, 'stdout', o.sink);
    captureOutput(child.stderr!, 'stderr', o.sink);
    child.on('exit', (code, signal) => {
      processMs = performance.now() - started;
      exit = { code, signal };
    });
    // `close` comes after both pipes drained, so every line is in the sink before the result.
    child.on('close', () => finish({ exitCode: exit.code, signal: exit.signal, timedOut, stopped, processMs }));
  });
}
