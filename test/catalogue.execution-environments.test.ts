import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';

const ROLE = 'arn:aws:iam::123456789012:role/plinth-deployer';

describe('cloud accounts and execution environments', () => {
  let t: TestApp;
  let accountId: string;
  before(async () => {
    t = await startTestApp();
    const res = await t.call('POST', '/cloud-accounts', { body: { data: { givenId: 'main', name: 'Main', accountId: '123456789012', roleArn: ROLE } } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    accountId = res.body.data.id;
  });
  after(() => t.close());

  const cloud = (givenId: string, extra: Record<string, unknown> = {}) => ({
    givenId,
    name: givenId,
    type: 'CLOUD',
    cloudAccountId: accountId,
    region: 'eu-west-1',
    vpcId: 'vpc-0123456789abcdef0',
    subnetId: 'subnet-0123456789abcdef0',
    securityGroupId: 'sg-0123456789abcdef0',
    ...extra,
  });

  it('a cloud account holds an AWS account and the role to assume; patch rotates the role', async () => {
    const read = await t.call('GET', `/cloud-accounts/${accountId}`);
    assert.deepEqual(
      { provider: read.body.data.provider, accountId: read.body.data.accountId, roleArn: read.body.data.roleArn },
      { provider: 'AWS', accountId: '123456789012', roleArn: ROLE },
    );
    // The external id is Plinth's: unique to the cloud account, so no other tenant can have Plinth
    // assume the role with it (the confused deputy). It is never chosen by the caller.
    assert.match(read.body.data.externalId, /^plinth-[0-9a-f]{32}$/);
    const patched = await t.call('PATCH', `/cloud-accounts/${accountId}`, { body: { data: { roleArn: `${ROLE}-2` } } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.roleArn, `${ROLE}-2`);
    assert.equal(patched.body.data.externalId, read.body.data.externalId);
    const chosen = await t.call('PATCH', `/cloud-accounts/${accountId}`, { body: { data: { externalId: 'ext-1' } } });
    assert.equal(chosen.status, 400);
    await t.call('PATCH', `/cloud-accounts/${accountId}`, { body: { data: { roleArn: ROLE } } });
  });

  it('a role of another AWS account is 422, a malformed account id 400', async () => {
    const mismatch = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'bad', name: 'Bad', accountId: '210987654321', roleArn: ROLE } },
    });
    assert.equal(mismatch.status, 422);
    assert.equal(mismatch.body.code, 'Api:CloudAccount:ROLE_ACCOUNT_MISMATCH');
    const malformed = await t.call('POST', '/cloud-accounts', { body: { data: { givenId: 'bad', name: 'Bad', accountId: '12', roleArn: ROLE } } });
    assert.equal(malformed.status, 400);
  });

  it('cloud accounts and execution environments need ADMIN to change, VIEWER reads them', async () => {
    const member = await serviceAccountCaller(t, 'MEMBER');
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const admin = await serviceAccountCaller(t, 'ADMIN');
    const ca = { givenId: 'm', name: 'M', accountId: '123456789012', roleArn: ROLE };
    assert.equal((await t.call('POST', '/cloud-accounts', { token: member.token, body: { data: ca } })).status, 403);
    assert.equal((await t.call('POST', '/execution-environments', { token: member.token, body: { data: cloud('m') } })).status, 403);
    assert.equal((await t.call('GET', '/execution-environments', { token: viewer.token })).status, 200);
    assert.equal((await t.call('GET', '/cloud-accounts', { token: viewer.token })).status, 200);
    assert.equal((await t.call('POST', '/execution-environments', { token: admin.token, body: { data: cloud('by-admin') } })).status, 201);
  });

  it('a CLOUD execution environment answers with every field it was created with', async () => {
    const res = await t.call('POST', '/execution-environments', { body: { data: cloud('eu') } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const { id, createdAt, updatedAt, organizationId, egressAllow, ...rest } = res.body.data;
    assert.ok(id && createdAt && updatedAt && organizationId);
    assert.deepEqual(rest, cloud('eu'));
    assert.equal(egressAllow, null, "Plinth's own field beside them: no narrowing unless set");
  });

  it('CLOUD without its network fields is 400 listing each; LOCAL with them is 400', async () => {
    const missing = await t.call('POST', '/execution-environments', { body: { data: { givenId: 'x', name: 'x', type: 'CLOUD', region: 'eu-west-1' } } });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.details[0].items, [
      '/data/cloudAccountId: is required when type is CLOUD',
      '/data/vpcId: is required when type is CLOUD',
      '/data/subnetId: is required when type is CLOUD',
      '/data/securityGroupId: is required when type is CLOUD',
    ]);
    const local = await t.call('POST', '/execution-environments', { body: { data: { givenId: 'y', name: 'y', type: 'LOCAL', region: 'eu-west-1' } } });
    assert.equal(local.status, 400);
    assert.deepEqual(local.body.details[0].items, ['/data/region: must be absent when type is LOCAL']);
  });

  it('a LOCAL execution environment reports its network fields as empty strings', async () => {
    const res = await t.call('POST', '/execution-environments', { body: { data: { givenId: 'host', name: 'Worker host', type: 'LOCAL' } } });
    assert.equal(res.status, 201);
    for (const f of ['cloudAccountId', 'region', 'vpcId', 'subnetId', 'securityGroupId']) assert.equal(res.body.data[f], '');
    const patch = await t.call('PATCH', `/execution-environments/${res.body.data.id}`, { body: { data: { vpcId: 'vpc-0123456789abcdef0' } } });
    assert.equal(patch.status, 400);
    const type = await t.call('PATCH', `/execution-environments/${res.body.data.id}`, { body: { data: { type: 'CLOUD' } } });
    assert.equal(type.status, 400, 'the type is fixed');
  });

  it('an egress allowlist narrows its steps: null by default, set and cleared by PATCH, a bad entry 400 naming it', async () => {
    const res = await t.call('POST', '/execution-environments', { body: { data: { givenId: 'narrow', name: 'Narrow', type: 'LOCAL' } } });
    assert.equal(res.status, 201);
    assert.equal(res.body.data.egressAllow, null);
    const id = res.body.data.id;
    const set = await t.call('PATCH', `/execution-environments/${id}`, {
      body: { data: { egressAllow: ['registry.opentofu.org', '*.github.com', '203.0.113.0/24'] } },
    });
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.data.egressAllow, ['registry.opentofu.org', '*.github.com', '203.0.113.0/24']);
    assert.deepEqual((await t.call('GET', `/execution-environments/${id}`)).body.data.egressAllow, ['registry.opentofu.org', '*.github.com', '203.0.113.0/24']);
    const bad = await t.call('PATCH', `/execution-environments/${id}`, { body: { data: { egressAllow: ['github.com', '10.0.0.0/99', 'http://x'] } } });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.details[0].items, ['/data/egressAllow/1: is not a valid CIDR', '/data/egressAllow/2: is neither a CIDR nor a host name']);
    const cleared = await t.call('PATCH', `/execution-environments/${id}`, { body: { data: { egressAllow: null } } });
    assert.equal(cleared.body.data.egressAllow, null);
    const created = await t.call('POST', '/execution-environments', { body: { data: { givenId: 'closed', name: 'Closed', type: 'LOCAL', egressAllow: [] } } });
    assert.deepEqual(created.body.data.egressAllow, []);
  });

  it('a cloud account of another organization is 404, like a missing one', async () => {
    const orgId = await createOrganization(t, 'Foreign');
    const foreign = await t.call('POST', '/cloud-accounts', {
      headers: inOrg(orgId),
      body: { data: { givenId: 'f', name: 'F', accountId: '123456789012', roleArn: ROLE } },
    });
    const res = await t.call('POST', '/execution-environments', { body: { data: cloud('foreign', { cloudAccountId: foreign.body.data.id }) } });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'Api:CloudAccount:NOT_FOUND');
    assert.equal((await t.call('GET', `/cloud-accounts/${foreign.body.data.id}`)).status, 404);
  });

  it('lists with a type filter; a duplicate givenId is 409', async () => {
    assert.equal((await t.call('POST', '/execution-environments', { body: { data: cloud('eu') } })).status, 409);
    const locals = await t.call('GET', '/execution-environments?type=LOCAL');
    assert.ok(locals.body.data.length > 0);
    assert.ok(locals.body.data.every((e: { type: string }) => e.type === 'LOCAL'));
  });

  it('deleting what is in use is 409 naming the users, then succeeds once they are gone', async () => {
    const ee = (await t.call('POST', '/execution-environments', { body: { data: cloud('used') } })).body.data;
    const project = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data;
    const env = (
      await t.call('POST', '/environments', { body: { data: { projectId: project.id, givenId: 'prod', name: 'Prod', executionEnvironmentId: ee.id } } })
    ).body.data;

    const eeDelete = await t.call('DELETE', `/execution-environments/${ee.id}`);
    assert.equal(eeDelete.status, 409);
    assert.equal(eeDelete.body.code, 'Api:ExecutionEnvironment:IN_USE');
    assert.deepEqual(eeDelete.body.details[0].items, ['environments: shop/prod']);

    const caDelete = await t.call('DELETE', `/cloud-accounts/${accountId}`);
    assert.equal(caDelete.status, 409);
    assert.equal(caDelete.body.code, 'Api:CloudAccount:IN_USE');
    assert.match(caDelete.body.details[0].items[0], /^execution environments: .*used/);

    assert.equal((await t.call('DELETE', `/environments/${env.id}`)).status, 204);
    assert.equal((await t.call('DELETE', `/execution-environments/${ee.id}`)).status, 204);
  });
});
