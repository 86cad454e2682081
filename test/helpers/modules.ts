import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestApp } from './app.ts';
import type { GitServer } from './git-server.ts';

/**
 * The module catalogue's tests publish from a real repository of the tests' Git server: a network, a
 * database consuming the network's outputs, and a service consuming the database's. Each module is a
 * directory of OpenTofu code under `modules/`.
 */
export function commitModules(git: GitServer): string {
  return git.commitWith('public', 'main', (work) => {
    // Each module as OpenTofu code, and as the tests' OpenTofu stand-in reads it (standin.json).
    const module = (name: string, variables: string[], outputs: Record<string, unknown>, required: string[] = []) => {
      mkdirSync(path.join(work, 'modules', name), { recursive: true });
      const vars = variables.map((v) => `variable "${v}" {\n  default = null\n}\n`).join('');
      const outs = Object.entries(outputs)
        .map(([o, value]) => `output "${o}" {\n  value = ${JSON.stringify(value)}\n}\n`)
        .join('');
      writeFileSync(path.join(work, 'modules', name, 'main.tf'), `${vars}${outs}`);
      const standin = {
        variables: Object.fromEntries([...variables.map((v) => [v, { default: null }]), ...required.map((v) => [v, {}])]),
        resources: { [`standin_${name.replace(/-/g, '_')}.main`]: { attributes: Object.fromEntries(variables.map((v) => [v, `\${var.${v}}`])) } },
        outputs: Object.fromEntries(Object.entries(outputs).map(([o, value]) => [o, { value }])),
      };
      writeFileSync(path.join(work, 'modules', name, 'standin.json'), JSON.stringify(standin));
    };
    module('network', ['cidr', 'name'], { vpc_id: 'vpc-${var.name}', subnet_ids: ['subnet-a', 'subnet-b'] });
    module('database', ['vpc_id', 'subnet', 'size'], { endpoint: 'db.${var.vpc_id}' });
    module('service', ['endpoint', 'cpu'], { url: 'https://${var.endpoint}' });
    // An ECS service: its outputs name the cluster and service its container deployments run in.
    module('container', ['name'], {
      ecs_cluster_arn: `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:cluster/shop`,
      ecs_service_arn: `arn:aws:ecs:us-west-2:${ECS_ACCOUNT}:service/shop/\${var.name}`,
    });
    // A database whose code needs a variable its inputs never give: its plan fails.
    module('database-broken', ['vpc_id', 'subnet', 'size'], { endpoint: 'db.${var.vpc_id}' }, ['password']);
  });
}

/** The AWS account the container module's service runs in. */
export const ECS_ACCOUNT = '111122223333';

/** The inputs and outputs of each module's version 1.0.0. */
export const MODULES = {
  network: {
    type: 'aws/network',
    path: 'modules/network',
    inputs: [
      {
        id: 'name',
        label: 'Network name',
        type: 'string',
        required: true,
        immutable: true,
        patterns: [{ pattern: '^[a-z][a-z0-9-]*$', message: 'lower-case letters, digits and -' }],
      },
      { id: 'cidr', label: 'CIDR block', type: 'string', default: '10.0.0.0/16' },
    ],
    outputs: [{ name: 'vpc_id' }, { name: 'subnet_ids' }],
  },
  database: {
    type: 'aws/database',
    path: 'modules/database',
    inputs: [
      { id: 'vpc_id', label: 'Network', type: 'reference', module: 'aws/network', output: 'vpc_id', required: true },
      { id: 'subnet', label: 'Subnet', type: 'string' },
      { id: 'size', label: 'Size', type: 'string', values: [{ value: 'small' }, { value: 'large' }], default: 'small' },
    ],
    outputs: [{ name: 'endpoint' }],
  },
  service: {
    type: 'aws/service',
    path: 'modules/service',
    inputs: [
      { id: 'endpoint', label: 'Database endpoint', type: 'string', required: true },
      { id: 'cpu', label: 'CPU units', type: 'number', min: 256, default: 256, min_current_value: true },
    ],
    outputs: [{ name: 'url' }],
  },
  container: {
    type: 'aws/container',
    path: 'modules/container',
    inputs: [{ id: 'name', label: 'Service name', type: 'string', required: true }],
    outputs: [{ name: 'ecs_cluster_arn' }, { name: 'ecs_service_arn' }],
  },
} as const;

export interface PublishedModule {
  definitionId: string;
  versionId: string;
}

/** publishModule creates the definition of one of MODULES and publishes its version from the code source. */
export async function publishModule(
  t: TestApp,
  codeSourceId: string,
  name: keyof typeof MODULES,
  options: { version?: string; headers?: Record<string, string>; global?: boolean } = {},
): Promise<PublishedModule> {
  const m = MODULES[name];
  const definition = await t.call('POST', '/module-definitions', {
    headers: options.headers,
    body: { data: { type: m.type, name, ...(options.global ? { global: true } : {}) } },
  });
  assert.equal(definition.status, 201, JSON.stringify(definition.body));
  const version = await t.call('POST', '/module-versions', {
    headers: options.headers,
    body: {
      data: {
        moduleDefinitionId: definition.body.data.id,
        version: options.version ?? '1.0.0',
        source: { codeSourceId, ref: 'main', path: m.path },
        inputs: m.inputs,
        outputs: m.outputs,
      },
    },
  });
  assert.equal(version.status, 201, JSON.stringify(version.body));
  return { definitionId: definition.body.data.id, versionId: version.body.data.id };
}
