// npm run bench:cli: how long the `plinth` command takes to run, against `node -e 0` (Node's own start).
//
// Starts `plinth api-server` on an embedded PostgreSQL in a temporary data directory (for the one command that
// calls the API), then runs each command BENCH_RUNS times, interleaved (a burst of other work on the
// machine lands on all of them alike), each as a shell runs it: the executable spawned by its path
// (bin/plinth.js through its `#!/usr/bin/env -S node …` line, node found on PATH), stdout to
// /dev/null. Each figure is the wall time from the spawn to the process's exit, on the monotonic clock.
// Prints p50, p99 and max per command and each p50 over node -e 0's. Exits 1 when the goal is missed:
// `plinth version` and `plinth --help` under 150 ms and within 1.5x of node -e 0 at p50.
//
// BENCH_RUNS (runs per command, default 50). The build in dist/ is brought up to date first, so no
// run pays for a rebuild.

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, PLINTH_BIN, ROOT, startPlinthProcess, type PlinthProcess } from '../test/helpers/plinth-process.ts';

const RUNS = Number(process.env.BENCH_RUNS || 50);
const GOAL = { underMs: 150, ratio: 1.5 };

interface Command {
  name: string;
  file: string;
  args: string[];
  /** Held to the goal. */
  goal?: boolean;
}

const COMMANDS: Command[] = [
  { name: 'node -e 0', file: 'node', args: ['-e', '0'] },
  { name: 'plinth version', file: PLINTH_BIN, args: ['version'], goal: true },
  { name: 'plinth --help', file: PLINTH_BIN, args: ['--help'], goal: true },
  { name: 'plinth completion bash', file: PLINTH_BIN, args: ['completion', 'bash'] },
  { name: 'plinth whoami (API on loopback)', file: PLINTH_BIN, args: ['whoami'] },
];

const say = (line: string) => process.stderr.write(`${line}\n`);

/** runOnce spawns the command and resolves to its wall time in ms; it fails on a non-zero exit. */
function runOnce(command: Command, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command.file, command.args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0) resolve(ms);
      else reject(new Error(`${command.name} exited ${code ?? signal}: ${stderr}`));
    });
  });
}

/** The value at rank ceil(p x n) of the sorted values (nearest rank). */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

async function main() {
  execFileSync(process.execPath, ['scripts/build.js', '--if-stale'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-cli-'));
  const configHome = mkdtempSync(path.join(os.tmpdir(), 'plinth-bench-cli-config-'));
  const adminToken = `plk_bench_${randomBytes(24).toString('base64url')}`;
  let server: PlinthProcess | undefined;
  try {
    say(`starting plinth api-server on an embedded PostgreSQL in ${dataDir} ...`);
    server = await startPlinthProcess(
      { PLINTH_DATA_DIR: dataDir, PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: adminToken, LOG_LEVEL: 'warn' },
      { command: 'api-server', readyTimeoutMs: 120_000, discardStdout: true },
    );
    const env: NodeJS.ProcessEnv = {
      // The node of this process first on PATH: the one `#!/usr/bin/env node` and `node -e 0` find.
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      HOME: configHome,
      XDG_CONFIG_HOME: configHome,
      PLINTH_HOST: server.baseUrl,
      PLINTH_TOKEN: adminToken,
    };
    // Once each, unmeasured: the files are in the page cache for every measured run alike.
    for (const command of COMMANDS) await runOnce(command, env);
    const times = COMMANDS.map(() => [] as number[]);
    say(`running each command ${RUNS} times ...`);
    for (let run = 0; run < RUNS; run++) {
      for (const [i, command] of COMMANDS.entries()) times[i].push(await runOnce(command, env));
    }
    report(times);
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(configHome, { recursive: true, force: true });
  }
}

function report(times: number[][]) {
  const [load1] = os.loadavg();
  const stats = times.map((values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] };
  });
  const node = stats[0].p50;
  const ms = (value: number) => value.toFixed(1).padStart(7);
  console.log(
    `plinth CLI start-up: ${RUNS} runs of each, interleaved, wall time from spawn to exit, Node ${process.version}, ${os.availableParallelism()} cores, load average ${load1.toFixed(1)}`,
  );
  console.log('');
  console.log(`${''.padEnd(34)}    p50     p99     max ms   p50 / node -e 0`);
  for (const [i, command] of COMMANDS.entries()) {
    const s = stats[i];
    console.log(`${command.name.padEnd(34)}${ms(s.p50)} ${ms(s.p99)} ${ms(s.max)}      ${(s.p50 / node).toFixed(2)}x`);
  }
  console.log('');
  let met = true;
  for (const [i, command] of COMMANDS.entries()) {
    if (!command.goal) continue;
    const { p50 } = stats[i];
    const ok = p50 < GOAL.underMs && p50 <= GOAL.ratio * node;
    met &&= ok;
    console.log(
      `${command.name}: p50 ${p50.toFixed(1)} ms (goal < ${GOAL.underMs}), ${(p50 / node).toFixed(2)}x node -e 0 (goal <= ${GOAL.ratio}x)  ${ok ? 'met' : 'MISSED'}`,
    );
  }
  if (!met) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
