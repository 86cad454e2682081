import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PLINTH_BIN, ROOT } from './plinth-process.ts';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string>;
  /** Written to the CLI's standard input, which is then closed. */
  input?: string;
  /** Run on a terminal (util-linux's `script`): stdout then carries stderr too, as a terminal shows both. */
  terminal?: boolean;
  timeoutMs?: number;
  /** Called with everything written to stderr so far, at each write, and the pid (to signal it). */
  onStderr?: (stderr: string, pid: number) => void;
  /** The same, for stdout. */
  onStdout?: (stdout: string, pid: number) => void;
}

/** A user of the CLI: a config directory of their own ($XDG_CONFIG_HOME) and the environment they run it in. */
export interface CliUser {
  configHome: string;
  run(args: string[], options?: CliOptions): Promise<CliResult>;
  /** Runs with `-o json`, asserts exit 0, and returns stdout parsed. */
  json<T = any>(args: string[], options?: CliOptions): Promise<T>;
}

/** The parent's environment without anything that would point the CLI elsewhere than the test says. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith('PLINTH_') || key === 'NODE_TEST_CONTEXT' || key === 'NO_COLOR') continue;
    env[key] = value;
  }
  return env;
}

/** cliUser makes a user with an empty config directory; `env` is added to every run. */
export function cliUser(env: Record<string, string> = {}): CliUser {
  const configHome = mkdtempSync(path.join(os.tmpdir(), 'plinth-cli-'));
  const run = (args: string[], options: CliOptions = {}) =>
    new Promise<CliResult>((resolve, reject) => {
      const command = [process.execPath, PLINTH_BIN, ...args];
      const [file, ...argv] = options.terminal ? ['script', '-qec', command.map(shellQuoted).join(' '), '/dev/null'] : command;
      const child = spawn(file, argv, {
        cwd: ROOT,
        env: { ...baseEnv(), XDG_CONFIG_HOME: configHome, ...env, ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => {
        stdout += c;
        options.onStdout?.(stdout, child.pid!);
      });
      child.stderr.on('data', (c) => {
        stderr += c;
        options.onStderr?.(stderr, child.pid!);
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
      child.stdin.end(options.input ?? '');
    });
  return {
    configHome,
    run,
    json: async (args, options) => {
      const result = await run([...args, '-o', 'json'], options);
      if (result.code !== 0) throw new Error(`plinth ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
      try {
        return JSON.parse(result.stdout);
      } catch {
        throw new Error(`plinth ${args.join(' ')} -o json printed no JSON:\n${result.stdout}`);
      }
    },
  };
}

function shellQuoted(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}
