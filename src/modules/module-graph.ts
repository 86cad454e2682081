import { Type, type Static } from '@sinclair/typebox';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { StringEnum } from '../platform/schema.ts';
import { getEnvironmentRow } from '../environments/environments.service.ts';
import { findInstancesByIds, findInstancesOfEnvironment, findReferencesOfConsumers, type ModuleInstanceRow } from './module-instances.repo.ts';
import { ReferenceMessage } from './module-instances.schema.ts';
import { findProducerOutputs, messagesOf } from './reference-messages.ts';

export const NODE_KINDS = ['INSTANCE', 'EXTERNAL_INSTANCE'] as const;

const Node = Type.Object({
  id: Type.String(),
  givenId: Type.String(),
  kind: StringEnum(NODE_KINDS, {
    description: "INSTANCE: of this environment; EXTERNAL_INSTANCE: of another environment, referenced by one of this environment's",
  }),
  name: Type.String(),
  moduleType: Type.String(),
  moduleVersionId: Type.String(),
  version: Type.String(),
  environmentId: Type.String(),
  messages: Type.Array(ReferenceMessage, { description: 'Problems of its references whose producer does not exist (no edge can show them)' }),
});

const Edge = Type.Object({
  id: Type.String({ description: 'The consumer and the reference within its inputs' }),
  source: Type.String({ description: 'The producing node' }),
  target: Type.String({ description: 'The consuming node' }),
  consumedFields: Type.Array(Type.String(), { description: 'The outputs the reference consumes' }),
  crossEnv: Type.Boolean(),
  refInputId: Type.String(),
  refInputPath: Type.String(),
  messages: Type.Array(ReferenceMessage),
});

export const ModuleGraph = Type.Object(
  { nodes: Type.Array(Node), edges: Type.Array(Edge) },
  { $id: 'ModuleGraph', title: 'ModuleGraph', description: "An environment's module instances and the references between them" },
);
export type ModuleGraph = Static<typeof ModuleGraph>;

function nodeOf(row: ModuleInstanceRow, kind: (typeof NODE_KINDS)[number]): ModuleGraph['nodes'][number] {
  return {
    id: row.id,
    givenId: row.given_id,
    kind,
    name: row.name,
    moduleType: row.module_type,
    moduleVersionId: row.module_version_id,
    version: row.version,
    environmentId: row.environment_id,
    messages: [],
  };
}

/** moduleGraphOf draws an environment's instances, the instances elsewhere they reference, and one edge per reference. */
export async function moduleGraphOf(db: Db, principal: Principal, environmentId: string): Promise<ModuleGraph> {
  const environment = await getEnvironmentRow(db, principal, environmentId);
  const instances = await findInstancesOfEnvironment(db, environment.id);
  const refs = await findReferencesOfConsumers(
    db,
    instances.map((i) => i.id),
  );
  const nodes = new Map(instances.map((i) => [i.id, nodeOf(i, 'INSTANCE')]));
  const externalIds = [...new Set(refs.flatMap((r) => (r.producer_instance_id && !nodes.has(r.producer_instance_id) ? [r.producer_instance_id] : [])))];
  for (const external of await findInstancesByIds(db, principal.organizationId, externalIds)) nodes.set(external.id, nodeOf(external, 'EXTERNAL_INSTANCE'));
  const producers = await findProducerOutputs(db, [...new Set(refs.flatMap((r) => (r.producer_instance_id ? [r.producer_instance_id] : [])))]);
  const edges: ModuleGraph['edges'] = [];
  for (const ref of refs) {
    const messages = messagesOf(ref, producers);
    const producer = ref.producer_instance_id ? nodes.get(ref.producer_instance_id) : undefined;
    if (!producer) {
      nodes.get(ref.consumer_instance_id)!.messages.push(...messages);
      continue;
    }
    edges.push({
      id: `${ref.consumer_instance_id}:${ref.input_path}`,
      source: producer.id,
      target: ref.consumer_instance_id,
      consumedFields: [ref.output],
      crossEnv: producer.environmentId !== environment.id,
      refInputId: ref.input_id,
      refInputPath: ref.input_path,
      messages,
    });
  }
  return { nodes: [...nodes.values()], edges };
}
