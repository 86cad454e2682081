import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import type { SandboxNetwork } from '../src/engine/sandbox/sandbox.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
import { summarize, type Summary } from './engine-figures.ts';

/** The most a step's own network may add to the start of a sandbox built on demand, at p50. */
export const NETWORK_SETUP_TARGET_MS = 20;

/**
 * What a step's own network costs its start: sandboxes built on demand (no warm pool), from open() to
 * the end of `true` in them, with `PLINTH_SANDBOX_NETWORK=policy` against `none` (a network namespace
 * with nothing in it), taken in turns so that the machine's drift falls on both alike. Every spawn of
 * a workspace after its first pays this (a checkout, then `tofu init`, then `tofu plan`); a first
 * spawn taken from the warm pool pays it ahead.
 */
export async function networkSetupFigures(workRoot: string, samples: number): Promise<{ none: Summary; policy: Summary; addedP50: number }> {
  const sandboxes = new Map<SandboxNetwork, NamespaceSandbox>();
  for (const network of ['none', 'policy'] as const) {
    const root = path.join(workRoot, `network-${network}`);
    mkdirSync(root, { recursive: true });
    const env = { PLINTH_SANDBOX: 'namespaces', PLINTH_SANDBOX_POOL: '0', PLINTH_SANDBOX_NETWORK: network, PLINTH_SANDBOX_UID_BASE: network === 'none' ? '400000' : '410000', PLINTH_SANDBOX_UID_COUNT: '10000' };
    const sandbox = new NamespaceSandbox(loadSandboxSettings(env, root, 1));
    const report = await sandbox.start();
    if (report.mode !== 'namespaces') throw new Error(`the ${network} network cannot be measured here: ${report.detail}`);
    sandboxes.set(network, sandbox);
  }
  const times: Record<'none' | 'policy', number[]> = { none: [], policy: [] };
  for (let i = 0; i < samples; i++) {
    for (const network of ['none', 'policy'] as const) {
      const sandbox = sandboxes.get(network)!;
      const started = performance.now();
      const workspace = await sandbox.open();
      const proc = await workspace.spawn({ command: 'true', env: { PATH: '/usr/bin:/bin' } });
      proc.child.stdout?.resume();
      proc.child.stderr?.resume();
      await once(proc.child, 'close');
      times[network].push(performance.now() - started);
      await workspace.dispose();
    }
  }
  for (const sandbox of sandboxes.values()) await sandbox.close();
  const none = summarize(times.none);
  const policy = summarize(times.policy);
  return { none, policy, addedP50: policy.p50 - none.p50 };
}
