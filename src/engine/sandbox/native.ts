import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The sandbox's compiled programs (native/*.c), built into build/ by `npm ci`'s postinstall
 * (scripts/build-sandbox.mjs) wherever a C compiler is installed. Each has a fallback without one.
 */
const built = (name: string) => fileURLToPath(new URL(`../../../build/${name}`, import.meta.url));

/** The launcher (native/plinth-sandbox.c): builds a sandbox in one process where the shell init (SANDBOX_INIT) starts eight. */
export const NATIVE_LAUNCHER = built('plinth-sandbox');

/** The spawner (native/plinth-spawner.c): starts a worker's launchers where spawner-child.mjs would. */
export const NATIVE_SPAWNER = built('plinth-spawner');

/** The command names a worker's spawner runs under in /proc: the native one, or the JavaScript one's Node. */
export const SPAWNER_COMMS = [path.basename(NATIVE_SPAWNER), 'node'];

/** Why a setting that asks for one of these programs (`PLINTH_SANDBOX_LAUNCHER=native`, …) cannot have it. */
export function notBuilt(setting: string, file: string): string {
  return `${setting}=native, but ${file} was not built (npm ci builds it where a C compiler is installed)`;
}

/** Whether one of these programs was built here (and may be run). */
export function isBuilt(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
