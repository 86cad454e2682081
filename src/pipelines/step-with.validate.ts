import type { Static } from '@sinclair/typebox';
import type { StepType } from './pipeline-config.ts';
import { MAX_COMMAND_LENGTH, MAX_MODULE_INSTANCE_ID_LENGTH, MAX_PATH_LENGTH, MAX_TEXT_LENGTH, type STEP_WITH } from './pipelines.schema.ts';

/** A check of one `with` field: undefined when the value is acceptable, else what is wrong with it. */
export type WithRule = (value: unknown) => string | undefined;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const required =
  (rule: WithRule): WithRule =>
  (value) =>
    value === undefined ? 'is required' : rule(value);

const optional =
  (rule: WithRule): WithRule =>
  (value) =>
    value === undefined ? undefined : rule(value);

const nonEmptyString =
  (max: number): WithRule =>
  (value) => {
    if (typeof value !== 'string' || value.trim().length === 0) return 'must be a non-empty string';
    return value.length > max ? `must be at most ${max} characters` : undefined;
  };

/**
 * A path inside the run's fresh working directory. Absolute paths and `..` segments are refused, so a
 * config cannot point a step at the worker host's own files.
 */
const relativePath: WithRule = (value) => {
  if (typeof value !== 'string' || value.length === 0) return 'must be a non-empty relative path';
  if (value.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters`;
  if (value.startsWith('/') || value.startsWith('\\') || /^[A-Za-z]:/.test(value)) return "must be relative to the run's working directory";
  if (value.split(/[\\/]/).includes('..')) return 'must not contain ".." segments';
  return value.includes('\0') ? 'must not contain NUL characters' : undefined;
};

const environment: WithRule = (value) => {
  if (!isPlainObject(value)) return 'must be an object of variable names to string values';
  const bad = Object.entries(value).flatMap(([name, v]) => {
    if (!ENV_NAME.test(name)) return [`"${name}" is not a valid variable name`];
    return typeof v === 'string' ? [] : [`"${name}" must be a string`];
  });
  return bad.length ? bad.join('; ') : undefined;
};

const variables: WithRule = (value) => (isPlainObject(value) ? undefined : 'must be an object of variable names to values');

const tofuRules = { workingDirectory: optional(relativePath), variables: optional(variables) };

/** The check of each `with` field of each step type: exactly the fields of its schema (STEP_WITH). */
type WithRules = { [T in StepType]: { [K in keyof Static<(typeof STEP_WITH)[T]>]-?: WithRule } };

/**
 * The checks of the `with` fields of each step type, beyond their schema's: a field the schema does not
 * list is refused before these run (pipeline-config.validate.ts).
 */
export const WITH_RULES: WithRules = {
  script: {
    command: required(nonEmptyString(MAX_COMMAND_LENGTH)),
    env: optional(environment),
    workingDirectory: optional(relativePath),
  },
  approval: { message: optional(nonEmptyString(MAX_TEXT_LENGTH)) },
  'opentofu.plan': tofuRules,
  'opentofu.apply': tofuRules,
  'opentofu.destroy': tofuRules,
  'module.deploy': { moduleInstanceId: required(nonEmptyString(MAX_MODULE_INSTANCE_ID_LENGTH)) },
};
