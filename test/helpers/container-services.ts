import assert from 'node:assert/strict';
import { serviceArn, type EcsService } from './aws-events.ts';
import type { TestApp } from './app.ts';
import type { GitServer } from './git-server.ts';
import { commitModules, ECS_ACCOUNT, publishModule } from './modules.ts';

export interface ContainerServices {
  /** The module instance of each service, by service name. */
  instances: Record<string, string>;
  /** The environment of each service, by service name. */
  environments: Record<string, string>;
  accountId: string;
  secret: string;
}

/**
 * seedContainerServices publishes the tests' container module, makes an instance of it for each service
 * (in the environment each names, `prod` if none) whose stack has the outputs an apply would leave (no
 * OpenTofu runs), and a cloud account of the services' AWS account with its ingest secret.
 */
export async function seedContainerServices(t: TestApp, git: GitServer, services: (EcsService & { environment?: string })[]): Promise<ContainerServices> {
  commitModules(git);
  const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
  const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
  const container = await publishModule(t, codeSourceId, 'container');
  const environmentIds = new Map<string, string>();
  const result: ContainerServices = { instances: {}, environments: {}, accountId: '', secret: '' };
  for (const service of services) {
    const givenId = service.environment ?? 'prod';
    if (!environmentIds.has(givenId)) {
      const created = await t.call('POST', '/environments', { body: { data: { projectId, givenId, name: givenId } } });
      environmentIds.set(givenId, created.body.data.id);
    }
    const environmentId = environmentIds.get(givenId)!;
    const created = await t.call('POST', '/module-instances', {
      body: {
        data: { environmentId, moduleVersionId: container.versionId, givenId: service.service, name: service.service, values: { name: service.service } },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const output = { ecs_cluster_arn: `arn:aws:ecs:${service.region}:${service.account}:cluster/${service.cluster}`, ecs_service_arn: serviceArn(service) };
    await t.db
      .updateTable('stacks')
      .set({ output: JSON.stringify(output) as never })
      .where('module_instance_id', '=', created.body.data.id)
      .execute();
    result.instances[service.service] = created.body.data.id;
    result.environments[service.service] = environmentId;
  }
  const account = await t.call('POST', '/cloud-accounts', {
    body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: `arn:aws:iam::${ECS_ACCOUNT}:role/plinth` } },
  });
  assert.equal(account.status, 201, JSON.stringify(account.body));
  result.accountId = account.body.data.id;
  result.secret = account.body.data.ingestSecret;
  return result;
}
