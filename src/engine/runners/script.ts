import type { LogSink } from '../log-sink.ts';
import type { StepSandbox, StepWorkspace } from '../sandbox/index.ts';
import { captureOutput } from './output-capture.ts';

export interface ScriptOptions {
  command: string;
  env: Record<string, string>;
  workingDirectory?: string;
  timeoutMs?: number;
  killGraceMs: number;
  /** Where the process runs: its workspace, user, namespaces and limits (src/engine/sandbox). */
  sandbox: StepSandbox;
  sink: LogSink;
  /** Aborted when the engine wants the process gone (cancel, lost lease, drain). */
  signal: AbortSignal;
  onSpawn?: (pid: number) => void;
  /**
   * When given, disposing of the workspace is handed to it instead of awaited: the result (and so the
   * outcome's commit) does not wait for the workspace's removal, which runs once every process of the
   * step is gone. `cleanupMs` is then absent.
   */
  defer?: (dispose: Promise<void>) => void;
}

export interface ScriptResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stopped: boolean;
  /** Wall time of the process itself, spawn to exit: the engine's overhead is the rest of the step. */
  processMs: number;
  /** Making the working directory, and removing it afterwards (when awaited): engine time, reported for the benchmark. */
  prepareMs?: number;
  cleanupMs?: number;
  spawnError?: string;
}

/**
 * runScript runs `sh -c <command>` in a fresh workspace of the sandbox, streaming stdout and stderr
 * byte for byte into the sink. It stops the step (SIGTERM to every process, then SIGKILL after the grace
 * period) on timeout or when `signal` aborts, and disposes of the workspace afterwards: whatever of the
 * step still runs is killed and its files removed. Throws SandboxUnavailableError when steps cannot
 * run isolated on this host.
 */
export async function runScript(o: ScriptOptions): Promise<ScriptResult> {
  const started = performance.now();
  const workspace = await o.sandbox.open();
  let result: ScriptResult | undefined;
  try {
    const prepareMs = performance.now() - started;
    result = { ...(await runInWorkspace(o, workspace)), prepareMs };
    return result;
  } finally {
    const cleanupStarted = performance.now();
    const disposed = workspace.dispose();
    if (o.defer) o.defer(disposed);
    else {
      await disposed;
      if (result) result.cleanupMs = performance.now() - cleanupStarted;
    }
  }
}

function runInWorkspace(o: ScriptOptions, workspace: StepWorkspace): Promise<ScriptResult> {
  return new Promise((resolve) => {
    const started = performance.now();
    let processMs = 0;
    let timedOut = false;
    let stopped = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    const proc = workspace.spawn({ command: o.command, env: o.env, workingDirectory: o.workingDirectory });
    const child = proc.child;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (!child.pid || killTimer) return;
      proc.terminate();
      killTimer = setTimeout(() => proc.kill(), o.killGraceMs);
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
      // Whatever the step left behind goes too (the guard included): a step leaves no process running.
      proc.kill();
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
