import type { PipelineConfig, StepConfig } from './pipeline-config.ts';

/**
 * One change between two configs, as a dry run's patch lists it. Which side is present tells the kind of change: only
 * `value` is an addition, only `fromValue` a removal, both a replacement, and `from` a step that moved.
 */
export interface PatchOp {
  path: string;
  from?: string;
  fromValue?: unknown;
  pathLabel?: string;
  value?: unknown;
}

/** Labels of the config's own keys. Keys of `env` and `variables` are the user's and stay as written. */
const LABELS: Record<string, string> = {
  id: 'Id',
  name: 'Name',
  type: 'Type',
  needs: 'Needs',
  with: 'With',
  retry: 'Retry',
  maxAttempts: 'Max attempts',
  timeoutSeconds: 'Timeout (seconds)',
  command: 'Command',
  env: 'Environment',
  workingDirectory: 'Working directory',
  message: 'Message',
  variables: 'Variables',
  moduleInstanceId: 'Module instance id',
};
const USER_KEYED = new Set(['env', 'variables']);
const SEPARATOR = ' › ';

/** escapePointerToken escapes one reference token of a JSON Pointer (RFC 6901: `~` → `~0`, `/` → `~1`). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}

function stepLabel(step: StepConfig): string {
  return `Step ${JSON.stringify(step.name)}`;
}

function operation(path: string, labels: string[], before: unknown, after: unknown): PatchOp {
  return {
    path,
    pathLabel: labels.join(SEPARATOR),
    ...(before !== undefined ? { fromValue: before } : {}),
    ...(after !== undefined ? { value: after } : {}),
  };
}

/**
 * Walks two JSON values in step, one op per differing leaf. Objects are descended into (also when one
 * side is missing, so a newly added `retry` shows as `Retry › Max attempts`); arrays such as `needs`
 * are leaves, because their elements have no identity of their own.
 */
function diffValues(before: unknown, after: unknown, path: string, labels: string[], userKeyed: boolean, ops: PatchOp[]) {
  const beforeObject = isPlainObject(before) || before === undefined;
  const afterObject = isPlainObject(after) || after === undefined;
  if (beforeObject && afterObject && (before !== undefined || after !== undefined)) {
    const a = (before ?? {}) as Record<string, unknown>;
    const b = (after ?? {}) as Record<string, unknown>;
    const keys = [...Object.keys(b), ...Object.keys(a).filter((k) => !(k in b))];
    if (keys.length > 0) {
      for (const key of keys) {
        const label = userKeyed ? key : (LABELS[key] ?? key);
        const childUserKeyed = userKeyed || USER_KEYED.has(key) || !(key in LABELS);
        diffValues(a[key], b[key], `${path}/${escapePointerToken(key)}`, [...labels, label], childUserKeyed, ops);
      }
      return;
    }
  }
  if (!jsonEqual(before, after)) ops.push(operation(path, labels, before, after));
}

/** Ids of the common steps that keep their relative order: a longest common subsequence of both orders. */
function stepsInPlace(beforeIds: string[], afterIds: string[]): Set<string> {
  const n = beforeIds.length;
  const m = afterIds.length;
  const table = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = beforeIds[i] === afterIds[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const kept = new Set<string>();
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (beforeIds[i] === afterIds[j]) {
      kept.add(beforeIds[i]);
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  return kept;
}

/**
 * diffConfigs lists what changes from `before` to `after`, one PatchOp per changed leaf. Steps are
 * matched by `id`, so reordering or inserting steps does not make every later field look changed.
 * Paths are JSON Pointers into `after` (`/steps/<index in after>/retry/maxAttempts`), except for a
 * removed step, which only exists in `before`: its path is `/steps/<index in before>`. An added step
 * is one op whose `value` is the whole step, a removed one an op whose `fromValue` is. A step whose
 * position changed relative to the others carries `from` (its pointer in `before`) on a `Position` op.
 * Ops come in the order of `after`'s steps, then the removals in the order of `before`.
 */
export function diffConfigs(before: PipelineConfig, after: PipelineConfig): PatchOp[] {
  const ops: PatchOp[] = [];
  const beforeIndex = new Map(before.steps.map((s, i) => [s.id, i]));
  const afterIds = new Set(after.steps.map((s) => s.id));
  const common = (steps: StepConfig[]) => steps.map((s) => s.id).filter((id) => beforeIndex.has(id) && afterIds.has(id));
  const inPlace = stepsInPlace(common(before.steps), common(after.steps));

  after.steps.forEach((step, i) => {
    const path = `/steps/${i}`;
    const oldIndex = beforeIndex.get(step.id);
    if (oldIndex === undefined) {
      ops.push(operation(path, [stepLabel(step)], undefined, step));
      return;
    }
    if (!inPlace.has(step.id)) {
      ops.push({ ...operation(path, [stepLabel(step), 'Position'], oldIndex, i), from: `/steps/${oldIndex}` });
    }
    diffValues(before.steps[oldIndex], step, path, [stepLabel(step)], false, ops);
  });
  before.steps.forEach((step, i) => {
    if (!afterIds.has(step.id)) ops.push(operation(`/steps/${i}`, [stepLabel(step)], step, undefined));
  });
  return ops;
}
