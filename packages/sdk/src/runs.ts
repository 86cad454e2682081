import { PlinthTimeoutError } from './errors.js';
import { TERMINAL_RUN_STATUSES, type PipelineRun, type RunStatus } from './types.js';

export interface WaitOptions {
  /** Statuses that end the wait (default: SUCCEEDED, FAILED, CANCELLED). */
  until?: readonly RunStatus[];
  /** Give up after this long with a PlinthTimeoutError (default: never). */
  timeoutMs?: number;
  /** Time between two reads of the run (default 1,000 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Called with every read of the run (progress). */
  onPoll?: (run: PipelineRun) => void;
}

/** waitForRun reads the run until its status is one of `until`, and returns it. */
export async function waitForRun(read: (id: string) => Promise<PipelineRun>, id: string, options: WaitOptions = {}): Promise<PipelineRun> {
  const until = options.until ?? TERMINAL_RUN_STATUSES;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 1000;
  for (;;) {
    options.signal?.throwIfAborted();
    const run = await read(id);
    options.onPoll?.(run);
    if (until.includes(run.status)) return run;
    const left = deadline - Date.now();
    if (left <= 0) throw new PlinthTimeoutError(`run ${id} is still ${run.status}; gave up waiting for ${until.join(', ')}`);
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(interval, left)));
  }
}
