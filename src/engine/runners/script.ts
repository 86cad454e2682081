import type { LogSink } from '../log-sink.ts';
import type { StepWorkspace } from '../sandbox/index.ts';
import { captureOutput } from './output-capture.ts';
import { stopInStages, type StopGrace } from '../sandbox/stop.ts';

export interface ScriptOptions {
  command: string;
  env: Record<string, string>;
  workingDirectory?: string;
  timeoutMs?: number;
  stopGrace: StopGrace;
  /** The attempt's prepared workspace (src/engine/sandbox): where, as whom and within which limits it runs. */
  workspace: StepWorkspace;
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
  spawnError?: string;
}

/**
 * runScript runs `sh -c <command>` in the attempt's workspace, streaming stdout and stderr byte for byte
 * into the sink. It stops the step (stopInStages: SIGINT, SIGTERM, then SIGKILL) on timeout or when
 * `signal` aborts. The workspace is the caller's to dispose of (runStep).
 */
export function runScript(o: ScriptOptions): Promise<ScriptResult> {
  return runInWorkspace(o, o.workspace);
}

async function runInWorkspace(o: ScriptOptions, workspace: StepWorkspace): Promise<ScriptResult> {
  const started = performance.now();
  const proc = await workspace.spawn({ command: o.command, env: o.env, workingDirectory: o.workingDirectory });
  return new Promise((resolve) => {
    let processMs = 0;
    let timedOut = false;
    let stopped = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    const child = proc.child;
    let cancelStop: (() => void) | undefined;
    const stop = () => {
      if (!child.pid || cancelStop) return;
      cancelStop = stopInStages(proc, o.stopGrace);
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
      cancelStop?.();
      o.signal.removeEventListener('abort', onAbort);
      // Whatever the step left behind goes too (the guard included): a step leaves no process running.
      proc.kill();
      resolve(result);
    };
    // Node's message names the host's programs and paths: the step's error keeps only the errno (EAGAIN, ENOMEM...).
    child.on('error', (error: NodeJS.ErrnoException) =>
      finish({ exitCode: null, signal: null, timedOut, stopped, processMs: performance.now() - started, spawnError: error.code ?? 'unknown error' }),
    );
    if (child.pid) o.onSpawn?.(child.pid);
    if (o.signal.aborted) onAbort();
    else o.signal.addEventListener('abort', onAbort);
    // As bytes, with backpressure and the log limits (output-capture.ts).
    captureOutput(child.stdout!, 'stdout', o.sink);
    captureOutput(child.stderr!, 'stderr', o.sink);
    child.on('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      processMs = performance.now() - started;
      exit = { code, signal };
    });
    // `close` comes after both pipes drained, so every line is in the sink before the result.
    child.on('close', () => finish({ exitCode: exit.code, signal: exit.signal, timedOut, stopped, processMs }));
  });
}
