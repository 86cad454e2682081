import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/platform/db/embedded.ts';

/** A port nobody listens on right now (the OS picks it). */
export { freePort };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The `plinth` executable, which `npm start` runs too. */
export const PLINTH_BIN = path.join(ROOT, 'bin', 'plinth.js');

/** The node flags of `npm start` (`exec node <flags> bin/plinth.js serve`), so tests run Plinth as it ships. */
export function startScriptNodeFlags(): string[] {
  const start: string = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const words = start.replace(/^exec\s+/, '').split(/\s+/);
  const bin = words.indexOf('bin/plinth.js');
  if (words[0] !== 'node' || bin < 0) throw new Error(`unexpected start script: ${start}`);
  return words.slice(1, bin);
}

export interface PlinthProcess {
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  /** Everything the process printed so far, stdout and stderr. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends SIGTERM and waits for the exit; SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * startPlinthProcess runs the real CLI (`node bin/plinth.js <command>`, as `npm start` does) with the given
 * environment on a free port, and resolves once GET /health answers 200.
 */
export interface StartOptions {
  /** The CLI command: serve (default), api-server, worker. */
  command?: string;
  readyTimeoutMs?: number;
  /** Send stdout to /dev/null instead of keeping it (a benchmark's request logs would pile up). */
  discardStdout?: boolean;
  /** Extra flags for node itself. */
  nodeArgs?: string[];
  /** Hears the process's output as it comes, before it is ready too. */
  onOutput?: (chunk: string) => void;
}

export async function startPlinthProcess(env: Record<string, string>, options: StartOptions = {}): Promise<PlinthProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, [...startScriptNodeFlags(), ...(options.nodeArgs ?? []), PLINTH_BIN, options.command ?? 'serve'], {
    cwd: ROOT,
    env: { ...cleanEnv(), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', options.discardStdout ? 'ignore' : 'pipe', 'pipe'],
  });
  let output = '';
  const hear = (chunk: Buffer) => {
    output += chunk;
    options.onOutput?.(chunk.toString());
  };
  child.stdout?.on('data', hear);
  child.stderr!.on('data', hear);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const running: PlinthProcess = {
    child,
    pid: child.pid!,
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    exited,
    stop: async (timeoutMs = 20_000) => {
      // A second SIGTERM means "stop without draining" (exit 1): send one only if nobody has yet.
      if (!child.killed && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  while (Date.now() < deadline && !exitedEarly) {
    try {
      const res = await fetch(`${running.baseUrl}/health`);
      if (res.status === 200) return running;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`plinth did not become healthy:\n${output}`);
}

/** The parent's environment without anything that would point the child at another database. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (['DATABASE_URL', 'PORT', 'HOST', 'PLINTH_ADMIN_TOKEN', 'PLINTH_DATA_DIR', 'PLINTH_PG_PORT', 'NODE_TEST_CONTEXT'].includes(key)) continue;
    env[key] = value;
  }
  return env;
}

/** Whether a process with this pid is still alive. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether anything accepts TCP connections on the port. */
export async function isListening(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
