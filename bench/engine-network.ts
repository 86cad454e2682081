import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { summarize, type Summary } from './engine-figures.ts';

/** The most a step's own network may add to a step's start, at p50. */
export const NETWORK_SETUP_TARGET_MS = 20;

export interface NetworkFigures {
  /** A step's first process, its sandbox taken from the warm pool (how every step starts while the pool holds one). */
  warm: { none: Summary; policy: Summary; addedP50: number };
  /** A sandbox built when its process starts: every process of a step after its first, or any once the pool is empty. */
  onDemand: { none: Summary; policy: Summary; addedP50: number };
}

/**
 * What a step's own network costs: from open() (and spawn) to the end of `true`, with
 * `PLINTH_SANDBOX_NETWORK=policy` against `none` (a network namespace with nothing in it), taken in
 * turns so that the machine's drift falls on both alike; with the warm pool (the sandbox built ahead,
 * as a step's first process finds it) and without (built when the process starts).
 */
export async function networkSetupFigures(workRoot: string, samples: number): Promise<NetworkFigures> {
  return { warm: await compare(workRoot, samples, 1), onDemand: await compare(workRoot, samples, 0) };
}

async function compare(workRoot: string, samples: number, pool: number) {
  const sandboxes = { none: await sandboxOf(workRoot, 'none', pool), policy: await sandboxOf(workRoot, 'policy', pool) };
  const times = { none: [] as number[], policy: [] as number[] };
  for (let i = 0; i < samples; i++) {
    for (const network of ['none', 'policy'] as const) {
      const sandbox = sandboxes[network];
      // Untimed: the pool builds its next sandbox while no step is starting, as between a worker's steps.
      if (pool > 0) await sleep(400);
      const started = performance.now();
      const workspace = await sandbox.open();
      const proc = await workspace.spawn({ command: 'true', env: { PATH: '/usr/bin:/bin' } });
      proc.child.stdout?.resume();
      proc.child.stderr?.resume();
      await once(proc.child, 'close');
      times[network].push(performance.now() - started);
      await workspace.dispose();
      sandbox.replenish();
    }
  }
  await Promise.all([sandboxes.none.close(), sandboxes.policy.close()]);
  const none = summarize(times.none);
  const policy = summarize(times.policy);
  return { none, policy, addedP50: policy.p50 - none.p50 };
}

async function sandboxOf(workRoot: string, network: 'none' | 'policy', pool: number): Promise<NamespaceSandbox> {
  const root = path.join(workRoot, `network-${network}-${pool}`);
  mkdirSync(root, { recursive: true });
  const base = 400_000 + (network === 'none' ? 0 : 10_000) + pool * 20_000;
  const env = {
    PLINTH_SANDBOX: 'namespaces',
    PLINTH_SANDBOX_POOL: String(pool),
    PLINTH_SANDBOX_NETWORK: network,
    PLINTH_SANDBOX_UID_BASE: String(base),
    PLINTH_SANDBOX_UID_COUNT: '10000',
  };
  const sandbox = new NamespaceSandbox(loadSandboxSettings(env, root, 1));
  const report = await sandbox.start();
  if (report.mode !== 'namespaces') throw new Error(`the ${network} network cannot be measured here: ${report.detail}`);
  return sandbox;
}
