import { stopInStages, type StopGrace } from '../engine/sandbox/stop.ts';
import type { LogSink } from '../engine/log-sink.ts';
import type { StepBind, StepWorkspace } from '../engine/sandbox/index.ts';
import { captureOutput } from '../engine/runners/output-capture.ts';
import type { OutputMask } from '../engine/runners/output-mask.ts';

export interface TofuProcessSpec {
  command: string;
  env: Record<string, string>;
  workingDirectory?: string;
  /** Host paths shown to the process (the configured OpenTofu binary). */
  binds?: StepBind[];
  /** Take stdout out of the process instead of logging it (stderr is still logged), up to this many bytes. */
  captureMaxBytes?: number;
}

export interface TofuProcessContext {
  workspace: StepWorkspace;
  sink: LogSink;
  /** Sensitive values and the run credential, to become `***` in each log record before it is stored (each stream masked on its own). */
  mask: OutputMask;
  /** Aborted when the engine wants the step gone (cancel, lost lease, drain). */
  signal: AbortSignal;
  /** When the step's time limit runs out (ms since the epoch). */
  deadline: number;
  stopGrace: StopGrace;
  onSpawn?: (pid: number) => void;
}

export interface TofuProcessResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stopped: boolean;
  timedOut: boolean;
  stdout?: Buffer;
  /** The captured stdout went past captureMaxBytes (the rest was read and dropped). */
  overflow?: boolean;
}

/**
 * runTofuProcess runs one command in the step's workspace and waits for it. Stopping it (the step is
 * cancelled, times out or its worker drains) interrupts it first (SIGINT: OpenTofu finishes what it is
 * doing, writes its state and releases its lock), then terminates and kills it (stopInStages).
 */
export async function runTofuProcess(ctx: TofuProcessContext, spec: TofuProcessSpec): Promise<TofuProcessResult> {
  const proc = await ctx.workspace.spawn({ command: spec.command, env: spec.env, workingDirectory: spec.workingDirectory, binds: spec.binds });
  return new Promise((resolve) => {
    let stopped = false;
    let timedOut = false;
    let cancelStop: (() => void) | undefined;
    const child = proc.child;
    const stop = () => {
      cancelStop ??= stopInStages(proc, ctx.stopGrace);
    };
    const onAbort = () => {
      stopped = true;
      stop();
    };
    const timeout = setTimeout(
      () => {
        timedOut = true;
        stop();
      },
      Math.max(0, ctx.deadline - Date.now()),
    );
    const chunks: Buffer[] = [];
    let captured = 0;
    let overflow = false;
    if (spec.captureMaxBytes === undefined) captureOutput(child.stdout!, 'stdout', ctx.sink, ctx.mask);
    else {
      child.stdout!.on('data', (chunk: Buffer) => {
        if (captured + chunk.length > spec.captureMaxBytes!) overflow = true;
        else chunks.push(chunk);
        captured += chunk.length;
      });
    }
    captureOutput(child.stderr!, 'stderr', ctx.sink, ctx.mask);
    let exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    child.on('exit', (code: number | null, signal: NodeJS.Signals | null) => (exit = { code, signal }));
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timeout);
      cancelStop?.();
      ctx.signal.removeEventListener('abort', onAbort);
      proc.kill();
      resolve({ exitCode: code, signal, stopped, timedOut, ...(spec.captureMaxBytes === undefined ? {} : { stdout: Buffer.concat(chunks), overflow }) });
    };
    child.on('error', () => finish(null, null));
    child.on('close', () => finish(exit.code, exit.signal));
    if (child.pid) ctx.onSpawn?.(child.pid);
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort);
  });
}
