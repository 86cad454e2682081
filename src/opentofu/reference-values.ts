// Reference values in a module instance's stack variables ({"$ref": {instance, output, path}}, docs/inputs.md)
// are replaced, when an OpenTofu step starts, by the producers' outputs as their current state holds them:
// what the producer last applied, sensitive outputs included (then masked in the step's log).

import type { Executor } from '../platform/db/db.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findReferences, readPointer, replaceReferences, type ReferenceTarget } from '../inputs/references.ts';
import { readState } from './state.service.ts';

export interface ResolvedReferences {
  values: Record<string, unknown>;
  /** The values taken from sensitive outputs, to mask. */
  sensitive: unknown[];
  /** The variables holding one: declared sensitive to OpenTofu, which then keeps what derives from them out of its output. */
  sensitiveNames: string[];
  /** Why references could not be resolved, one line each; empty when all were. */
  problems: string[];
}

type ProducerOutputs = Map<string, { value: unknown; sensitive: boolean }> | undefined;

/** The outputs in a producer's current state (OpenTofu's state format: `outputs: {name: {value, sensitive}}`). */
async function producerOutputs(db: Executor, secrets: SecretBox, organizationId: string, instanceId: string): Promise<ProducerOutputs> {
  const producer = await db
    .selectFrom('module_instances')
    .select('stack_id')
    .where('id', '=', instanceId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  if (!producer) return undefined;
  const state = await readState(db, secrets, { id: producer.stack_id, organizationId });
  const outputs = new Map<string, { value: unknown; sensitive: boolean }>();
  if (!state) return outputs;
  const parsed = JSON.parse(state.bytes.toString('utf8')) as { outputs?: Record<string, { value?: unknown; sensitive?: boolean }> };
  for (const [name, o] of Object.entries(parsed.outputs ?? {})) outputs.set(name, { value: o?.value, sensitive: o?.sensitive === true });
  return outputs;
}

/** resolveReferenceValues replaces every reference value in the variables by the output it names. */
export async function resolveReferenceValues(
  db: Executor,
  secrets: SecretBox,
  organizationId: string,
  variables: Record<string, unknown>,
): Promise<ResolvedReferences> {
  const { references } = findReferences(variables);
  if (references.length === 0) return { values: variables, sensitive: [], sensitiveNames: [], problems: [] };
  const producers = new Map<string, ProducerOutputs>();
  for (const id of new Set(references.map((r) => r.target.instance))) producers.set(id, await producerOutputs(db, secrets, organizationId, id));
  const sensitive: unknown[] = [];
  const sensitiveNames = new Set<string>();
  const problems: string[] = [];
  let name = '';
  const resolve = (target: ReferenceTarget) => {
    const outputs = producers.get(target.instance);
    const output = outputs?.get(target.output);
    if (!outputs) problems.push(`module instance ${target.instance} does not exist`);
    else if (!output) problems.push(`module instance ${target.instance} has not applied an output "${target.output}"`);
    if (!output) return null;
    const value = readPointer(output.value, target.path);
    if (value === undefined) problems.push(`output "${target.output}" of module instance ${target.instance} has nothing at ${target.path}`);
    if (output.sensitive) {
      sensitive.push(value);
      sensitiveNames.add(name);
    }
    return value ?? null;
  };
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(variables)) {
    name = key;
    values[key] = replaceReferences(value, resolve);
  }
  return { values, sensitive, sensitiveNames: [...sensitiveNames], problems: [...new Set(problems)] };
}
