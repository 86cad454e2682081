import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV, waitFor } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES } from './helpers/modules.ts';

// The API's snapshots reach the tests' Git server on loopback, as an operator would allow a self-hosted one.
Object.assign(process.env, LOOPBACK_GIT_ENV);

describe('module versions', () => {
  let t: TestApp;
  let git: GitServer;
  let codeSourceId: string;
  let commit: string;

  before(async () => {
    t = await startTestApp();
    git = await startGitServer();
    commit = commitModules(git);
    codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
  });
  after(async () => {
    await t.close();
    await git.close();
  });

  const definition = async (type: string) => (await t.call('POST', '/module-definitions', { body: { data: { type, name: type } } })).body.data.id as string;
  const publish = (moduleDefinitionId: string, data: Record<string, unknown>) =>
    t.call('POST', '/module-versions', {
      body: {
        data: {
          moduleDefinitionId,
          version: '1.0.0',
          source: { codeSourceId, ref: 'main', path: MODULES.network.path },
          inputs: MODULES.network.inputs,
          ...data,
        },
      },
    });

  it('publishes a version pinned to the commit its ref names, and makes the definition ACTIVE', async () => {
    const id = await definition('pin/network');
    const res = await publish(id, { outputs: MODULES.network.outputs, changelog: 'First' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const version = res.body.data;
    assert.deepEqual(version.source, { codeSourceId, ref: 'main', commitSha: commit, path: 'modules/network' });
    assert.equal(version.deprecated, false);
    assert.match(version.archiveSha256, /^[0-9a-f]{64}$/);
    assert.deepEqual(version.outputs, [
      { name: 'vpc_id', sensitive: false },
      { name: 'subnet_ids', sensitive: false },
    ]);
    const defined = (await t.call('GET', `/module-definitions/${id}`)).body.data;
    assert.equal(defined.status, 'ACTIVE');
    assert.equal(defined.latestVersion, '1.0.0');
    assert.equal(defined.latestVersionId, version.id);
    assert.deepEqual((await t.call('GET', `/module-versions/${version.id}`)).body.data, version);
    const actives = await t.call('GET', '/module-definitions?status=ACTIVE&limit=200');
    assert.ok(actives.body.data.some((d: { id: string }) => d.id === id));
  });

  it('refuses a duplicate (409) and a version not newer than the latest (422); a newer one becomes the latest', async () => {
    const id = await definition('order/network');
    assert.equal((await publish(id, { version: '1.2.0' })).status, 201);
    assertError(await publish(id, { version: '1.2.0' }), 409, 'Api:ModuleVersion:ALREADY_EXISTS');
    assertError(await publish(id, { version: '1.1.9' }), 422, 'Api:ModuleVersion:NOT_NEWER');
    assertError(await publish(id, { version: '1.2.0-rc.1' }), 422, 'Api:ModuleVersion:NOT_NEWER');
    assertError(await publish(id, { version: 'v2' }), 422, 'Api:ModuleVersion:INVALID_VERSION');
    const newer = await publish(id, { version: '1.10.0' });
    assert.equal(newer.status, 201);
    assert.equal((await t.call('GET', `/module-definitions/${id}`)).body.data.latestVersion, '1.10.0');
    const listed = await t.call('GET', `/module-versions?moduleDefinitionId=${id}`);
    assert.deepEqual(
      listed.body.data.map((v: { version: string }) => v.version),
      ['1.2.0', '1.10.0'],
    );
  });

  it('checks that the ref and the path exist', async () => {
    const id = await definition('missing/network');
    assertError(await publish(id, { source: { codeSourceId, ref: 'no-such-branch', path: 'modules/network' } }), 422, 'Git:Ref:NOT_FOUND');
    assertError(await publish(id, { source: { codeSourceId, ref: 'main', path: 'modules/nowhere' } }), 422, 'Git:Path:NOT_FOUND');
    assertError(await publish(id, { source: { codeSourceId, ref: 'main', path: '../etc' } }), 422, 'Git:Path:INVALID');
    assert.equal((await t.call('GET', `/module-definitions/${id}`)).body.data.status, 'DRAFT');
  });

  it('checks the inputs: sound properties, unique outputs, moved_from naming inputs of earlier versions only', async () => {
    const id = await definition('inputs/network');
    const res = await publish(id, {
      inputs: [
        { id: 'a', label: 'A', type: 'number', min: 5, max: 1 },
        { id: 'a', label: 'Again', type: 'string' },
        { id: 'b', label: 'B', type: 'string', moved_from: ['never_existed'] },
      ],
      outputs: [{ name: 'x' }, { name: 'x' }],
    });
    assertError(res, 422, 'Api:ModuleVersion:INVALID');
    assert.deepEqual(res.body.details[0].items.sort(), [
      '/data/inputs/0/min: must not be greater than max',
      '/data/inputs/1/id: duplicate input id "a"',
      '/data/inputs/2/moved_from/0: "never_existed" is not an input of an earlier version',
      '/data/outputs/1/name: duplicate output name "x"',
    ]);
    assert.equal((await publish(id, { inputs: [{ id: 'old_name', label: 'Name', type: 'string' }] })).status, 201);
    const renamed = await publish(id, { version: '2.0.0', inputs: [{ id: 'name', label: 'Name', type: 'string', moved_from: ['old_name'] }] });
    assert.equal(renamed.status, 201, JSON.stringify(renamed.body));
  });

  it('deprecates a version with a message', async () => {
    const id = await definition('deprecate/network');
    const version = (await publish(id, {})).body.data;
    const res = await t.call('POST', `/module-versions/${version.id}/deprecate`, { body: { data: { message: 'use 2.x' } } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.deprecated, true);
    assert.equal(res.body.data.deprecationMessage, 'use 2.x');
    assert.equal(typeof res.body.data.deprecatedAt, 'string');
  });

  it('bounds the publishes under way per caller, per organization and per process; each refusal says when to retry', async () => {
    // A tenant: a member's key in an organization of its own, with a code source (an administrator's) and a definition there.
    const tenant = async (name: string) => {
      const organizationId = await createOrganization(t, name);
      const member = await serviceAccountCaller(t, 'MEMBER', organizationId);
      const as = { token: member.token, headers: inOrg(organizationId) };
      // Two sources taken in turn: fetches into one source's cache wait for each other, and these must overlap.
      const source = async (name: string) =>
        (await t.call('POST', '/code-sources', { headers: as.headers, body: { data: { name, url: git.repoUrl('public') } } })).body.data.id;
      const sourceIds = [await source('modules'), await source('modules again')];
      // And two definitions: versions of one published at once race to be the newest.
      const definition = async (type: string) => (await t.call('POST', '/module-definitions', { ...as, body: { data: { type, name: type } } })).body.data.id;
      const definitionIds = [await definition('busy/network'), await definition('busy/dns')];
      let minor = 0;
      const publishAs = (token = member.token) => {
        const [codeSourceId, moduleDefinitionId] = [sourceIds[minor % 2], definitionIds[minor % 2]];
        const version = `1.${minor++}.0`;
        return t.call('POST', '/module-versions', {
          token,
          headers: as.headers,
          body: { data: { moduleDefinitionId, version, source: { codeSourceId, ref: 'main' }, inputs: [] } },
        });
      };
      return Object.assign(publishAs, { organizationId });
    };
    const [first, second, third] = [await tenant('Publisher one'), await tenant('Publisher two'), await tenant('Publisher three')];
    // Each fetch asks for the refs first; the Git server holds every answer, so the four stay under way.
    const fetchesStarted = () => git.requests.filter((r) => r.startsWith('GET /public.git/info/refs')).length;
    const release = git.hold();
    try {
      const seen = fetchesStarted();
      const held = [first(), first(), second(), second()];
      await waitFor('four publishes fetching', async () => (fetchesStarted() >= seen + 4 ? true : undefined), 60_000);
      const overCaller = await first();
      assertError(overCaller, 429, 'Api:ModuleVersion:TOO_MANY_PUBLISHES');
      assert.equal(overCaller.headers['retry-after'], '10');
      assert.match(overCaller.body.message, /At most 2 module publishes at once by one caller/);
      const colleague = await serviceAccountCaller(t, 'MEMBER', first.organizationId);
      const overOrganization = await first(colleague.token);
      assertError(overOrganization, 429, 'Api:ModuleVersion:TOO_MANY_PUBLISHES');
      assert.match(overOrganization.body.message, /At most 2 module publishes at once in one organization/);
      const overProcess = await third();
      assertError(overProcess, 429, 'Api:ModuleVersion:TOO_MANY_PUBLISHES');
      assert.match(overProcess.body.message, /This server holds 4 module publishes already/);
      release();
      for (const res of await Promise.all(held)) assert.equal(res.status, 201, JSON.stringify(res.body));
    } finally {
      release();
    }
    assert.equal((await third()).status, 201, 'the slots are given back');
  });

  it('lets a VIEWER read versions and not publish', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    const id = await definition('viewer/network');
    assert.equal((await t.call('GET', '/module-versions', { token: viewer.token })).status, 200);
    const res = await t.call('POST', '/module-versions', {
      token: viewer.token,
      body: { data: { moduleDefinitionId: id, version: '1.0.0', source: { codeSourceId, ref: 'main' }, inputs: [] } },
    });
    assertError(res, 403, 'Auth:Permission:DENIED');
  });
});
