import { egressAllowListFrom } from '../../platform/outbound/address-policy.ts';
import { defaultEgressPolicy } from './egress.ts';
import { SANDBOX_MODES, SANDBOX_NETWORKS, type SandboxMode, type SandboxNetwork, type SandboxSettings } from './sandbox.ts';

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const found = allowed.find((a) => a === raw);
  if (!found) throw new Error(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return found;
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number, integer: boolean, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > max || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}, got "${raw}"`);
  }
  return value;
}

function count(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) throw new Error(`${name} must be an integer from 0 to ${max}, got "${raw}"`);
  return value;
}

/** A URL's host and port, as a step would connect to it. */
function endpointOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)) };
}

/**
 * loadSandboxSettings reads the `PLINTH_SANDBOX*` and `PLINTH_STEP_*` knobs (defaults in docs/sandbox.md).
 * `concurrency` is the worker's: by default it keeps as many sandboxes built ahead as it runs steps at
 * once. `reachable` are URLs every step may reach whatever the egress policy says (the state backend).
 */
export function loadSandboxSettings(
  env: NodeJS.ProcessEnv,
  workRoot: string | undefined,
  concurrency = 16,
  reachable: readonly string[] = [],
): SandboxSettings {
  const uidBase = positive(env, 'PLINTH_SANDBOX_UID_BASE', 200_000, true, 4_000_000_000);
  const uidCount = positive(env, 'PLINTH_SANDBOX_UID_COUNT', 50_000, true, 4_294_967_294 - uidBase);
  return {
    mode: oneOf<SandboxMode>(env, 'PLINTH_SANDBOX', SANDBOX_MODES, 'auto'),
    network: oneOf<SandboxNetwork>(env, 'PLINTH_SANDBOX_NETWORK', SANDBOX_NETWORKS, 'policy'),
    egress: defaultEgressPolicy(egressAllowListFrom(env), reachable.map(endpointOf)),
    limits: {
      maxProcesses: positive(env, 'PLINTH_STEP_MAX_PROCESSES', 512, true),
      memoryMb: positive(env, 'PLINTH_STEP_MEMORY_MB', 2048, true),
      cpus: positive(env, 'PLINTH_STEP_CPUS', 1, false, 1024),
      diskMb: positive(env, 'PLINTH_STEP_DISK_MB', 10_240, true),
      diskFiles: positive(env, 'PLINTH_STEP_DISK_FILES', 1_000_000, true),
    },
    uidBase,
    uidCount,
    workRoot,
    poolSize: count(env, 'PLINTH_SANDBOX_POOL', concurrency, 1024),
  };
}
