import assert from 'node:assert/strict';
import type { TestApp } from '../helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller, userCaller } from '../helpers/callers.ts';
import { createPipeline, insertRun } from '../pipelines.fixtures.ts';

/** One organization's resources, one of each kind a route can name, created through the API. */
export interface OrgResources {
  organizationId: string;
  ids: Record<string, string>;
}

async function created(t: TestApp, url: string, data: unknown, headers?: Record<string, string>): Promise<string> {
  const res = await t.call('POST', url, { headers, body: { data } });
  assert.equal(res.status, 201, `POST ${url}: ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

/** seedOrganization creates a project, environment, stack, pipeline, run, definition, value, cloud account, execution environment, service account and key. */
export async function seedOrganization(
  t: TestApp,
  organizationId: string,
  tag: string,
  member?: { membershipId: string; userId: string },
): Promise<OrgResources> {
  const headers = inOrg(organizationId);
  const project = await created(t, '/projects', { givenId: `p-${tag}`, name: `P ${tag}` }, headers);
  const environment = await created(t, '/environments', { projectId: project, givenId: `e-${tag}`, name: `E ${tag}` }, headers);
  const stack = await created(t, '/stacks', { projectId: project, environmentId: environment, name: `s-${tag}` }, headers);
  const pipeline = await createPipeline(t, { name: `pl-${tag}` }, headers);
  const run = await insertRun(t, pipeline, 'SUCCEEDED');
  const definition = await created(
    t,
    '/default-value-definitions',
    { givenId: `d-${tag}`, name: 'D', schema: { id: 'n', label: 'N', type: 'string' } },
    headers,
  );
  const value = await created(t, '/default-values', { defaultValueDefinitionId: definition, parentId: project, value: 'v' }, headers);
  const cloudAccount = await created(
    t,
    '/cloud-accounts',
    { givenId: `ca-${tag}`, name: 'CA', accountId: '123456789012', roleArn: 'arn:aws:iam::123456789012:role/plinth' },
    headers,
  );
  const executionEnvironment = await created(t, '/execution-environments', { givenId: `ee-${tag}`, name: 'EE', type: 'LOCAL' }, headers);
  const sa = await serviceAccountCaller(t, 'MEMBER', organizationId);
  const membership =
    member ??
    (await t.call('GET', '/memberships', { headers })).body.data.map((m: { id: string; userId: string }) => ({ membershipId: m.id, userId: m.userId }))[0];
  return {
    organizationId,
    ids: {
      organization: organizationId,
      project,
      environment,
      stack,
      pipeline: pipeline.id,
      pipelineVersion: pipeline.latestVersionId,
      run,
      definition,
      value,
      cloudAccount,
      executionEnvironment,
      serviceAccount: sa.serviceAccountId,
      apiKey: sa.keyId,
      membership: membership.membershipId,
      user: membership.userId,
    },
  };
}

export interface Callers {
  superAdmin: string;
  member: string;
  viewer: string;
  foreignOwner: string;
}

/** The roles the suites call as: the super-administrator, a MEMBER and a VIEWER service account, and another organization's OWNER. */
/**
 * Two organizations with one of each resource. The other organization's user (and membership) is its
 * own OWNER, who belongs to no other organization; the super-administrator belongs to both.
 */
export async function seedTwoOrganizations(t: TestApp) {
  const ownOrgId = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
  const foreignOrgId = await createOrganization(t, 'Foreign');
  const foreignOwner = await userCaller(t, 'foreign-owner@example.com', 'OWNER', foreignOrgId);
  const own = await seedOrganization(t, ownOrgId, 'own');
  const foreign = await seedOrganization(t, foreignOrgId, 'foreign', foreignOwner);
  const member = await serviceAccountCaller(t, 'MEMBER');
  const viewer = await serviceAccountCaller(t, 'VIEWER');
  const callers: Callers = { superAdmin: t.adminToken, member: member.token, viewer: viewer.token, foreignOwner: foreignOwner.token };
  return { own, foreign, callers };
}
