import { statSync } from 'node:fs';
import path from 'node:path';
import type { StepBind } from './sandbox.ts';

/** Every bind target lies under this directory of the step's root, so none can cover what the sandbox built. */
export const BIND_ROOT = '/plinth/';

export interface CheckedBind extends StepBind {
  kind: 'dir' | 'file';
}

/**
 * checkBinds refuses what a runner must never ask for: a target outside `/plinth/`, one that is not
 * normal (`..`, `//`, a trailing slash), two targets of which one holds the other (the inner mount point
 * would be made inside the outer bind's host directory, as root), and a source that is not an existing
 * absolute file or directory. Runners are trusted code; this keeps one of their mistakes from becoming
 * a hole.
 */
export function checkBinds(binds: readonly StepBind[] | undefined): CheckedBind[] {
  const checked = (binds ?? []).map((bind) => {
    const { source, target } = bind;
    if (
      !path.posix.isAbsolute(target) ||
      path.posix.normalize(target) !== target ||
      !target.startsWith(BIND_ROOT) ||
      target.length === BIND_ROOT.length ||
      target.endsWith('/')
    ) {
      throw new Error(`bind target "${target}" must be a normal absolute path under ${BIND_ROOT}`);
    }
    if (!path.isAbsolute(source)) throw new Error(`bind source "${source}" must be an absolute path`);
    const info = statSync(source, { throwIfNoEntry: false });
    if (!info || !(info.isDirectory() || info.isFile())) throw new Error(`bind source "${source}" must be an existing file or directory`);
    return { source, target, writable: bind.writable === true, kind: info.isDirectory() ? 'dir' : 'file' } satisfies CheckedBind;
  });
  for (const a of checked) {
    for (const b of checked) {
      if (a !== b && (a.target === b.target || b.target.startsWith(`${a.target}/`))) throw new Error(`bind targets "${a.target}" and "${b.target}" overlap`);
    }
  }
  return checked;
}

/** bindArgs renders binds as the init script's trailing arguments: four per bind (see SANDBOX_INIT). */
export function bindArgs(binds: readonly CheckedBind[]): string[] {
  return binds.flatMap((b) => [b.writable ? 'rw' : 'ro', b.kind, b.source, b.target]);
}

/**
 * hostPathOf maps a path under one of the binds' targets to the host path it names: where a step of the
 * unisolated mode, which cannot mount, finds it.
 */
export function hostPathOf(target: string, binds: readonly StepBind[]): string {
  const normal = path.posix.normalize(target);
  for (const bind of binds) {
    if (normal === bind.target) return bind.source;
    if (normal.startsWith(`${bind.target}/`)) return path.join(bind.source, normal.slice(bind.target.length + 1));
  }
  throw new Error(`"${target}" lies under no bind's target`);
}

/** insideBinds checks that `target` lies under one of the binds' targets, and returns it as the step sees it. */
export function insideBinds(target: string, binds: readonly StepBind[]): string {
  hostPathOf(target, binds);
  return path.posix.normalize(target);
}
