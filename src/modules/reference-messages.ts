import type { Executor } from '../platform/db/db.ts';
import { findReferencesOfConsumers, type ModuleReferenceRow } from './module-instances.repo.ts';
import type { ReferenceMessage, ReferenceProblem } from './module-instances.schema.ts';
import { outputsOf } from './module-versions.repo.ts';

/** What a reference needs to know of its producer: the outputs its version declares, and those its stack has applied. */
export interface ProducerOutputs {
  declared: ReadonlySet<string>;
  applied: ReadonlySet<string>;
}

/** The producers' declared and applied outputs, by instance id. */
export async function findProducerOutputs(db: Executor, producerIds: string[]): Promise<Map<string, ProducerOutputs>> {
  if (producerIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('module_instances as i')
    .innerJoin('module_versions as v', 'v.id', 'i.module_version_id')
    .innerJoin('stacks as s', 's.id', 'i.stack_id')
    .select(['i.id', 'v.outputs', 's.output'])
    .where('i.id', 'in', producerIds)
    .execute();
  return new Map(rows.map((r) => [r.id, { declared: new Set(outputsOf(r).map((o) => o.name)), applied: new Set(Object.keys(r.output ?? {})) }]));
}

/** messagesOf says what is wrong with one reference: its producer gone, the output not declared, or not applied yet. */
export function messagesOf(ref: ModuleReferenceRow, producers: ReadonlyMap<string, ProducerOutputs>): ReferenceMessage[] {
  const message = (kind: ReferenceProblem, text: string): ReferenceMessage[] => [
    {
      field: ref.output,
      producerInstanceId: ref.producer_instance_id ?? ref.producer_ref,
      refInputId: ref.input_id,
      refInputPath: ref.input_path,
      kind,
      message: text,
    },
  ];
  const producer = ref.producer_instance_id ? producers.get(ref.producer_instance_id) : undefined;
  if (!producer) return message('MISSING_INSTANCE', `Module instance "${ref.producer_ref}" does not exist`);
  if (!producer.declared.has(ref.output)) return message('MISSING_OUTPUT', `Module instance "${ref.producer_ref}" declares no output "${ref.output}"`);
  if (!producer.applied.has(ref.output)) return message('OUTPUT_NOT_APPLIED', `Output "${ref.output}" of "${ref.producer_ref}" has not been applied yet`);
  return [];
}

/** referencesWithMessages lists the references of some consumers, each with its problems. */
export async function referencesWithMessages(db: Executor, consumerIds: string[]) {
  const refs = await findReferencesOfConsumers(db, consumerIds);
  const producers = await findProducerOutputs(db, [...new Set(refs.flatMap((r) => (r.producer_instance_id ? [r.producer_instance_id] : [])))]);
  return refs.map((r) => ({
    inputId: r.input_id,
    inputPath: r.input_path,
    instance: r.producer_ref,
    output: r.output,
    path: r.output_path,
    ...(r.producer_instance_id ? { producerInstanceId: r.producer_instance_id } : {}),
    messages: messagesOf(r, producers),
  }));
}
