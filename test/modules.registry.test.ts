import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { archiveToken, ARCHIVE_TOKEN_TTL_MS } from '../src/modules/registry.service.ts';
import { generateSecretKeyText, parseSecretKey, SecretBox } from '../src/platform/secrets/secret-box.ts';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller, userCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, MODULES } from './helpers/modules.ts';
import { discover, downloadLocation, install, listVersions, newestMatching, RegistryError, type RegistryModuleAddress } from './helpers/registry-client.ts';

// The API's snapshots reach the tests' Git server on loopback, as an operator would allow a self-hosted one.
Object.assign(process.env, LOOPBACK_GIT_ENV);

const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: os.tmpdir() };

describe('module registry', () => {
  let t: TestApp;
  let git: GitServer;
  let origin: string;
  let codeSourceId: string;
  let ownOrg: string;
  let otherOrg: string;
  let otherCodeSourceId: string;
  let viewer: string;
  let otherViewer: string;
  let clone: string;
  /** The commits each network version was published from. */
  const commits: Record<string, string> = {};

  const publish = async (type: string, version: string, options: { headers?: Record<string, string>; global?: boolean; codeSource?: string } = {}) => {
    const found = await t.call('GET', `/module-definitions?type=${encodeURIComponent(type)}&limit=200`, { headers: options.headers });
    const wanted = found.body.data.find((d: { global: boolean }) => d.global === Boolean(options.global));
    let definitionId: string = wanted?.id;
    if (!definitionId) {
      const created = await t.call('POST', '/module-definitions', {
        headers: options.headers,
        body: { data: { type, name: type, ...(options.global ? { global: true } : {}) } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      definitionId = created.body.data.id;
    }
    const res = await t.call('POST', '/module-versions', {
      headers: options.headers,
      body: {
        data: {
          moduleDefinitionId: definitionId,
          version,
          source: { codeSourceId: options.codeSource ?? codeSourceId, ref: 'main', path: MODULES.network.path },
          inputs: [],
        },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.data as { id: string; source: { commitSha: string } };
  };

  /** The regular files under `dir` at `commit`, as the repository has them. */
  const repositoryFiles = (commit: string, dir: string) => {
    const names = execFileSync('git', ['ls-tree', '-r', '--name-only', commit, `${dir}/`], { cwd: clone, env: GIT_ENV, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    return new Map(names.map((name) => [name.slice(dir.length + 1), execFileSync('git', ['show', `${commit}:${name}`], { cwd: clone, env: GIT_ENV })]));
  };

  const address = (namespace: string, name = 'network', system = 'aws'): RegistryModuleAddress => ({ namespace, name, system });
  const versionsAs = async (token: string | undefined, m: RegistryModuleAddress) => listVersions(await discover(origin), m, token);
  const refusal = async (p: Promise<unknown>) => {
    const error = await p.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof RegistryError, String(error));
    return error;
  };

  before(async () => {
    t = await startTestApp();
    // Fastify's inject follows no URL: the client talks to a real port, as tofu would.
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    git = await startGitServer();
    commitModules(git);
    ownOrg = (await t.call('GET', '/auth/whoami')).body.data.organizationId;
    codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    otherOrg = await createOrganization(t, 'Registry other');
    otherCodeSourceId = (await t.call('POST', '/code-sources', { headers: inOrg(otherOrg), body: { data: { name: 'modules', url: git.repoUrl('public') } } }))
      .body.data.id;
    viewer = (await serviceAccountCaller(t, 'VIEWER')).token;
    otherViewer = (await serviceAccountCaller(t, 'VIEWER', otherOrg)).token;

    // Three versions of aws/network, each from a commit of its own, one with a nested file.
    commits['1.0.0'] = (await publish('aws/network', '1.0.0')).source.commitSha;
    git.commitWith('public', 'main', (work) => {
      mkdirSync(path.join(work, 'modules/network/policies'), { recursive: true });
      writeFileSync(path.join(work, 'modules/network/policies/egress.json'), '{"allow": ["10.0.0.0/8"]}\n');
      writeFileSync(path.join(work, 'modules/network/README.md'), '# network 1.1\n');
    });
    commits['1.1.0'] = (await publish('aws/network', '1.1.0')).source.commitSha;
    git.commitWith('public', 'main', (work) => writeFileSync(path.join(work, 'modules/network/README.md'), '# network 2.0\n'));
    commits['2.0.0'] = (await publish('aws/network', '2.0.0')).source.commitSha;

    clone = mkdtempSync(path.join(os.tmpdir(), 'plinth-registry-clone-'));
    // Not execFileSync: the Git server answers from this process's event loop.
    await promisify(execFile)('git', ['clone', '-q', git.repoUrl('public'), '.'], { cwd: clone, env: GIT_ENV });
  });
  after(async () => {
    await t.close();
    await git.close();
    rmSync(clone, { recursive: true, force: true });
  });

  it('serves the discovery document without a credential, whatever credential is sent', async () => {
    for (const token of [null, 'plk_not_valid', t.adminToken]) {
      const res = await t.call('GET', '/.well-known/terraform.json', { token });
      assert.equal(res.status, 200, `${token}`);
      assert.deepEqual(res.body, { 'modules.v1': '/registry/modules/v1/' });
      assert.match(String(res.headers['content-type']), /^application\/json/);
    }
    assert.equal((await discover(origin)).href, `${origin}/registry/modules/v1/`);
  });

  it('installs the newest version a constraint allows, as tofu init does: the files of the module directory at its commit', async () => {
    const installed = await install(origin, address(ownOrg), '~> 1.0', viewer);
    assert.equal(installed.version, '1.1.0');
    assert.equal(installed.download.status, 204);
    assert.equal(installed.download.headers.get('cache-control'), 'no-store');
    assert.match(installed.location.pathname, /^\/registry\/module-archives\/[0-9a-f]+\/archive\.tar\.gz$/);
    assert.equal(installed.archive.headers.get('content-type'), 'application/gzip');
    assert.equal(installed.archive.headers.get('cache-control'), 'no-store');
    const version = (
      await t.call('GET', `/module-versions?moduleDefinitionId=${(await t.call('GET', '/module-definitions?type=aws/network')).body.data[0].id}`)
    ).body.data[1];
    assert.equal(installed.archive.headers.get('etag'), `"${version.archiveSha256}"`);
    const expected = repositoryFiles(commits['1.1.0'], 'modules/network');
    assert.deepEqual([...installed.files.keys()].sort(), ['README.md', 'main.tf', 'policies/egress.json', 'standin.json']);
    assert.deepEqual(installed.files, expected);

    const pinned = await install(origin, address(ownOrg), '1.0.0', viewer);
    assert.deepEqual(pinned.files, repositoryFiles(commits['1.0.0'], 'modules/network'));
    assert.equal((await install(origin, address(ownOrg), '>= 1.0, < 3', viewer)).files.get('README.md')?.toString(), '# network 2.0\n');
  });

  it('lists the versions oldest first, deprecated ones included, and still downloads a deprecated one', async () => {
    assert.deepEqual(await versionsAs(viewer, address(ownOrg)), ['1.0.0', '1.1.0', '2.0.0']);
    const oldest = (await t.call('GET', '/module-versions?limit=200')).body.data.find(
      (v: { version: string; source: { commitSha: string } }) => v.version === '1.0.0' && v.source.commitSha === commits['1.0.0'],
    );
    assert.equal((await t.call('POST', `/module-versions/${oldest.id}/deprecate`, { body: { data: { message: 'use 2.x' } } })).status, 200);
    const versions = await versionsAs(viewer, address(ownOrg));
    assert.deepEqual(versions, ['1.0.0', '1.1.0', '2.0.0']);
    assert.equal(newestMatching(versions, '~> 1.0.0'), '1.0.0');
    assert.deepEqual((await install(origin, address(ownOrg), '~> 1.0.0', viewer)).files, repositoryFiles(commits['1.0.0'], 'modules/network'));
  });

  it("serves a global definition in every organization's namespace, and an organization's own definition of the type before it", async () => {
    await publish('gcp/bucket', '0.1.0', { global: true });
    assert.deepEqual(await versionsAs(viewer, address(ownOrg, 'bucket', 'gcp')), ['0.1.0']);
    assert.deepEqual(await versionsAs(otherViewer, address(otherOrg, 'bucket', 'gcp')), ['0.1.0']);
    const fromOther = await install(origin, address(otherOrg, 'bucket', 'gcp'), '~> 0.1', otherViewer);
    assert.equal(fromOther.version, '0.1.0');
    assert.ok(fromOther.files.has('main.tf'));

    await publish('gcp/bucket', '3.0.0', { headers: inOrg(otherOrg), codeSource: otherCodeSourceId });
    assert.deepEqual(await versionsAs(otherViewer, address(otherOrg, 'bucket', 'gcp')), ['3.0.0']);
    assert.deepEqual(await versionsAs(viewer, address(ownOrg, 'bucket', 'gcp')), ['0.1.0']);
  });

  it("answers another organization's key with a 404, as for a namespace that does not exist", async () => {
    const otherUser = await userCaller(t, 'registry-other@example.com', 'OWNER', otherOrg);
    const missing = '0123456789abcdef0123456789abcdef';
    for (const [who, token] of [
      ['service account', otherViewer],
      ['user', otherUser.token],
    ]) {
      for (const namespace of [ownOrg, missing]) {
        const refused = await refusal(versionsAs(token, address(namespace)));
        assert.equal(refused.status, 404, `${who} ${namespace}`);
        assert.deepEqual(refused.body, { ...(refused.body as object), code: 'Api:Organization:NOT_FOUND', message: `Organization ${namespace} not found` });
        const download = await refusal(downloadLocation(await discover(origin), address(namespace), '1.1.0', token));
        assert.equal(download.status, 404);
        assert.equal((download.body as { code: string }).code, 'Api:Organization:NOT_FOUND');
      }
    }
    // The user acts in its own organization's namespace, and a super-administrator in every one.
    assert.deepEqual(await versionsAs(otherUser.token, address(otherOrg, 'bucket', 'gcp')), ['3.0.0']);
    assert.deepEqual(await versionsAs(t.adminToken, address(otherOrg, 'bucket', 'gcp')), ['3.0.0']);
    // Inside the namespace, a module or version that is not there is a 404 too.
    assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/nothing/aws/versions`, { token: viewer }), 404, 'Api:ModuleDefinition:NOT_FOUND');
    assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/network/aws/9.9.9/download`, { token: viewer }), 404, 'Api:ModuleVersion:NOT_FOUND');
  });

  it('refuses a missing or invalid credential with a 401', async () => {
    const base = await discover(origin);
    assert.equal((await refusal(listVersions(base, address(ownOrg)))).status, 401);
    assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/network/aws/versions`, { token: null }), 401, 'Auth:Credential:MISSING');
    assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/network/aws/versions`, { token: 'plk_not_a_key' }), 401, 'Auth:Credential:INVALID');
    assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/network/aws/1.1.0/download`, { token: null }), 401, 'Auth:Credential:MISSING');
  });

  it('refuses an expired, altered or misdirected download token, and serves it once with no credential while valid', async () => {
    const { location } = await downloadLocation(await discover(origin), address(ownOrg), '1.1.0', viewer);
    const versionId = location.pathname.split('/')[3];
    const token = location.searchParams.get('token')!;
    const archiveUrl = (id: string, tok: string) => `/registry/module-archives/${id}/archive.tar.gz?token=${encodeURIComponent(tok)}`;
    const served = await fetch(new URL(archiveUrl(versionId, token), origin));
    assert.equal(served.status, 200);
    await served.arrayBuffer();

    const [keyId, expires, mac] = token.split('.');
    assert.ok(Number(expires) * 1000 <= Date.now() + ARCHIVE_TOKEN_TTL_MS + 1000);
    const flipped = (s: string) => s.slice(0, 5) + (s[5] === 'A' ? 'B' : 'A') + s.slice(6);
    const otherKey = new SecretBox(parseSecretKey(generateSecretKeyText(), 'test'));
    const otherVersion = (await downloadLocation(await discover(origin), address(ownOrg), '2.0.0', viewer)).location.pathname.split('/')[3];
    const refused: [string, string, string, string][] = [
      ['expired', versionId, archiveToken(TEST_SECRETS, versionId, Date.now() - 1000), 'Auth:Credential:EXPIRED'],
      ['a MAC altered', versionId, `${keyId}.${expires}.${flipped(mac)}`, 'Auth:Credential:INVALID'],
      ['a MAC with a character added', versionId, `${token}A`, 'Auth:Credential:INVALID'],
      ['an expiry moved', versionId, `${keyId}.${Number(expires) + 3600}.${mac}`, 'Auth:Credential:INVALID'],
      ['made for another version', otherVersion, token, 'Auth:Credential:INVALID'],
      ['made with another key', versionId, archiveToken(otherKey, versionId, Date.now() + 60_000), 'Auth:Credential:INVALID'],
      ['not a token', versionId, 'garbage', 'Auth:Credential:INVALID'],
    ];
    for (const [what, id, tok, code] of refused) {
      const answer = await t.call('GET', archiveUrl(id, tok), { token: null });
      assert.equal(answer.body?.code, code, what);
      assertError(answer, 401, code);
    }
    assertError(await t.call('GET', `/registry/module-archives/${versionId}/archive.tar.gz`, { token: null }), 400);
  });

  it('does not serve a definition whose type is not of the form <system>/<name>', async () => {
    for (const type of ['aws-eu/vpc', 'vpc', 'aws/vpc/v2', 'AWS/vpc', 'aws/_vpc']) await publish(type, '1.0.0');
    const notFound = async (name: string, system: string) => {
      const refused = await refusal(versionsAs(viewer, address(ownOrg, name, system)));
      assert.equal(refused.status, 404, `${name}/${system}`);
    };
    await notFound('vpc', 'aws');
    await notFound('vpc', 'awseu');
    await notFound('v2', 'vpc');
    // Not module addresses at all: OpenTofu refuses them before asking; the registry answers 400.
    for (const [name, system] of [
      ['vpc', 'aws-eu'],
      ['vpc', 'AWS'],
      ['_vpc', 'aws'],
    ]) {
      assertError(await t.call('GET', `/registry/modules/v1/${ownOrg}/${name}/${system}/versions`, { token: viewer }), 400);
    }
  });
});
