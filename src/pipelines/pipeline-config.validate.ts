import { RuleViolationError } from '../platform/errors.ts';
import { GIVEN_ID_PATTERN } from '../platform/schema.ts';
import { findCycles } from './dag.ts';
import { STEP_TYPES, type PipelineConfig, type StepConfig, type StepType } from './pipeline-config.ts';
import { MAX_ATTEMPTS, MAX_STEP_NAME_LENGTH, MAX_STEPS, MAX_TIMEOUT_SECONDS, STEP_KEYS, STEP_WITH } from './pipelines.schema.ts';
import { WITH_RULES } from './step-with.validate.ts';

const GIVEN_ID = new RegExp(GIVEN_ID_PATTERN);

type Problems = string[];

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStepType(value: unknown): value is StepType {
  return typeof value === 'string' && (STEP_TYPES as readonly string[]).includes(value);
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/**
 * pipelineConfigProblems lists every way `raw` fails to be a PipelineConfig, one line per problem,
 * each starting with the path of the offending value (`config/steps/2/needs/0: ...`). Empty means valid.
 * It checks the shape of PipelineConfigSchema (pipelines.schema.ts), whose fields and limits it takes,
 * and the rules a JSON Schema cannot say: needs naming other steps, no cycle, relative paths.
 */
export function pipelineConfigProblems(raw: unknown): string[] {
  const problems: Problems = [];
  if (!isPlainObject(raw)) return ['config: must be an object with a `steps` array'];
  for (const key of Object.keys(raw)) if (key !== 'steps') problems.push(`config/${key}: unknown field`);
  const steps = raw.steps;
  if (steps === undefined) return [...problems, 'config/steps: is required'];
  if (!Array.isArray(steps)) return [...problems, 'config/steps: must be an array'];
  if (steps.length === 0) return [...problems, 'config/steps: must hold at least one step'];
  if (steps.length > MAX_STEPS) return [...problems, `config/steps: must hold at most ${MAX_STEPS} steps, has ${steps.length}`];

  const firstIndexOf = new Map<string, number>();
  steps.forEach((step, i) => {
    const id = isPlainObject(step) ? step.id : undefined;
    if (typeof id === 'string' && !firstIndexOf.has(id)) firstIndexOf.set(id, i);
  });
  steps.forEach((step, i) => checkStep(step, i, firstIndexOf, problems));
  for (const cycle of findCycles(graphOf(steps, firstIndexOf))) {
    problems.push(`config/steps: cycle in needs: ${cycle.map((id) => `"${id}"`).join(' → ')}`);
  }
  return problems;
}

/**
 * The `{id, needs}` graph for cycle detection: a duplicated id counts once (its first step), so the
 * duplicate, already reported, cannot hide a cycle through the original.
 */
function graphOf(steps: unknown[], firstIndexOf: Map<string, number>) {
  return steps.flatMap((s, i) => {
    if (!isPlainObject(s) || typeof s.id !== 'string' || firstIndexOf.get(s.id) !== i) return [];
    return [{ id: s.id, needs: Array.isArray(s.needs) ? s.needs.filter((n): n is string => typeof n === 'string') : [] }];
  });
}

function checkStep(step: unknown, i: number, firstIndexOf: Map<string, number>, problems: Problems) {
  const at = `config/steps/${i}`;
  if (!isPlainObject(step)) {
    problems.push(`${at}: must be an object`);
    return;
  }
  for (const key of Object.keys(step)) {
    if (!(STEP_KEYS as readonly string[]).includes(key)) problems.push(`${at}/${key}: unknown field (allowed: ${STEP_KEYS.join(', ')})`);
  }
  checkId(step.id, at, i, firstIndexOf, problems);
  checkName(step.name, at, problems);
  checkNeeds(step.needs, step.id, at, firstIndexOf, problems);
  checkRetry(step.retry, at, problems);
  if (step.timeoutSeconds !== undefined && !isIntegerIn(step.timeoutSeconds, 1, MAX_TIMEOUT_SECONDS)) {
    problems.push(`${at}/timeoutSeconds: must be an integer from 1 to ${MAX_TIMEOUT_SECONDS}`);
  }
  if (step.type === undefined) problems.push(`${at}/type: is required`);
  else if (!isStepType(step.type)) problems.push(`${at}/type: unknown step type ${JSON.stringify(step.type)} (known: ${STEP_TYPES.join(', ')})`);
  else checkWith(step.type, step.with, at, problems);
}

function checkId(id: unknown, at: string, i: number, firstIndexOf: Map<string, number>, problems: Problems) {
  if (id === undefined) problems.push(`${at}/id: is required`);
  else if (typeof id !== 'string') problems.push(`${at}/id: must be a string`);
  else if (id.length > 60 || !GIVEN_ID.test(id)) {
    problems.push(`${at}/id: must be 1 to 60 letters, digits, "_" or "-", starting with a letter or digit`);
  } else if (firstIndexOf.get(id) !== i) {
    problems.push(`${at}/id: duplicate step id "${id}" (first used by config/steps/${firstIndexOf.get(id)})`);
  }
}

function checkName(name: unknown, at: string, problems: Problems) {
  if (name === undefined) problems.push(`${at}/name: is required`);
  else if (typeof name !== 'string' || name.trim().length === 0) problems.push(`${at}/name: must be a non-empty string`);
  else if (name.length > MAX_STEP_NAME_LENGTH) problems.push(`${at}/name: must be at most ${MAX_STEP_NAME_LENGTH} characters`);
}

function checkNeeds(needs: unknown, id: unknown, at: string, firstIndexOf: Map<string, number>, problems: Problems) {
  if (needs === undefined) return;
  if (!Array.isArray(needs)) {
    problems.push(`${at}/needs: must be an array of step ids`);
    return;
  }
  const seen = new Set<string>();
  needs.forEach((need, j) => {
    if (typeof need !== 'string') problems.push(`${at}/needs/${j}: must be a step id (string)`);
    else if (need === id) problems.push(`${at}/needs/${j}: a step cannot need itself ("${need}")`);
    else if (!firstIndexOf.has(need)) problems.push(`${at}/needs/${j}: unknown step "${need}"`);
    else if (seen.has(need)) problems.push(`${at}/needs/${j}: "${need}" is listed twice`);
    if (typeof need === 'string') seen.add(need);
  });
}

function checkRetry(retry: unknown, at: string, problems: Problems) {
  if (retry === undefined) return;
  if (!isPlainObject(retry)) {
    problems.push(`${at}/retry: must be an object such as {"maxAttempts": 3}`);
    return;
  }
  for (const key of Object.keys(retry)) if (key !== 'maxAttempts') problems.push(`${at}/retry/${key}: unknown field (allowed: maxAttempts)`);
  if (retry.maxAttempts === undefined) problems.push(`${at}/retry/maxAttempts: is required`);
  else if (!isIntegerIn(retry.maxAttempts, 1, MAX_ATTEMPTS)) problems.push(`${at}/retry/maxAttempts: must be an integer from 1 to ${MAX_ATTEMPTS}`);
}

function checkWith(type: StepType, value: unknown, at: string, problems: Problems) {
  if (value !== undefined && !isPlainObject(value)) {
    problems.push(`${at}/with: must be an object`);
    return;
  }
  const rules: Record<string, (value: unknown) => string | undefined> = WITH_RULES[type];
  const allowed = Object.keys(STEP_WITH[type].properties);
  const given = value ?? {};
  for (const key of Object.keys(given)) {
    if (!allowed.includes(key)) {
      problems.push(
        `${at}/with/${key}: unknown field for ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} step (${allowed.length ? `allowed: ${allowed.join(', ')}` : 'it takes none'})`,
      );
    }
  }
  for (const [key, rule] of Object.entries(rules)) {
    const problem = rule(given[key]);
    if (problem) problems.push(`${at}/with/${key}: ${problem}`);
  }
}

/** A copy holding only the known fields, so nothing unvalidated reaches the database. */
function normalizeStep(step: Record<string, unknown>): StepConfig {
  const out: StepConfig = { id: step.id as string, name: step.name as string, type: step.type as StepType };
  if (step.needs !== undefined) out.needs = [...(step.needs as string[])];
  if (step.with !== undefined) out.with = structuredClone(step.with as Record<string, unknown>);
  if (step.retry !== undefined) out.retry = { maxAttempts: (step.retry as { maxAttempts: number }).maxAttempts };
  if (step.timeoutSeconds !== undefined) out.timeoutSeconds = step.timeoutSeconds as number;
  return out;
}

/**
 * parsePipelineConfig turns untrusted JSON into a PipelineConfig, or throws a 422
 * `Api:PipelineConfig:INVALID` whose details list every problem found, each with its path.
 */
export function parsePipelineConfig(raw: unknown): PipelineConfig {
  const problems = pipelineConfigProblems(raw);
  if (problems.length > 0) {
    throw new RuleViolationError(
      'PipelineConfig',
      'INVALID',
      `The pipeline config has ${problems.length} problem${problems.length === 1 ? '' : 's'}`,
      problems,
      { problemCount: problems.length },
    );
  }
  return { steps: (raw as { steps: Record<string, unknown>[] }).steps.map(normalizeStep) };
}
