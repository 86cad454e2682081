import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { domainChecks } from '../src/domains/domain-poller.ts';
import { DuePoller } from '../src/platform/due-poller.ts';
import { startAwsStandin, type AwsStandin } from './aws/aws-standin.ts';
import { startDnsStandin, type DnsStandin } from './dns/dns-standin.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { awsEvent } from './helpers/aws-events.ts';
import { assertError, createOrganization, inOrg, serviceAccountCaller } from './helpers/callers.ts';
import { LOOPBACK_GIT_ENV } from './helpers/engine.ts';
import { startGitServer, type GitServer } from './helpers/git-server.ts';
import { commitModules, ECS_ACCOUNT, publishModule } from './helpers/modules.ts';

Object.assign(process.env, LOOPBACK_GIT_ENV);

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;
const DAY_S = 24 * 3600;

describe('domains of module instances: DNS verification, certificates and their events', () => {
  let t: TestApp;
  let git: GitServer;
  let aws: AwsStandin;
  let dns: DnsStandin;
  let instanceId: string;
  let accountId: string;
  let secret: string;
  let poller: DuePoller;

  before(async () => {
    aws = await startAwsStandin();
    dns = await startDnsStandin();
    t = await startTestApp({
      env: {
        PLINTH_AWS_ENDPOINT_URL: aws.url,
        AWS_ACCESS_KEY_ID: 'AKIAPLINTHTEST',
        AWS_SECRET_ACCESS_KEY: 'plinth-test-secret',
        PLINTH_DNS_SERVERS: dns.server,
        PLINTH_CLOUD_CHECK_INTERVAL_S: '1',
      },
    });
    git = await startGitServer();
    commitModules(git);
    const codeSourceId = (await t.call('POST', '/code-sources', { body: { data: { name: 'modules', url: git.repoUrl('public') } } })).body.data.id;
    const projectId = (await t.call('POST', '/projects', { body: { data: { givenId: 'shop', name: 'Shop' } } })).body.data.id;
    const environmentId = (await t.call('POST', '/environments', { body: { data: { projectId, givenId: 'prod', name: 'prod' } } })).body.data.id;
    const container = await publishModule(t, codeSourceId, 'container');
    instanceId = (
      await t.call('POST', '/module-instances', {
        body: { data: { environmentId, moduleVersionId: container.versionId, givenId: 'web', name: 'Web', values: { name: 'web' } } },
      })
    ).body.data.id;
    const account = await t.call('POST', '/cloud-accounts', {
      body: { data: { givenId: 'prod', name: 'Prod', accountId: ECS_ACCOUNT, roleArn: `arn:aws:iam::${ECS_ACCOUNT}:role/plinth` } },
    });
    accountId = account.body.data.id;
    secret = account.body.data.ingestSecret;
    poller = new DuePoller(t.db, domainChecks({ db: t.db, aws: t.app.config.aws, domains: t.app.config.domains }), 1, silent);
  });
  after(async () => {
    await t.close();
    await git.close();
    await aws.close();
    await dns.close();
  });

  const attach = (hostname: string, extra: Record<string, unknown> = { region: 'us-west-2' }) =>
    t.call('POST', '/domains', { body: { data: { moduleInstanceId: instanceId, hostname, cloudAccountId: accountId, ...extra } } });
  const events = async (limit = 50) => {
    const res = await t.call('GET', `/domains/events?moduleInstanceId=${instanceId}&limit=${limit}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data as { kind: string; data: string; domainId?: string; certificateIssuanceId?: string }[];
  };
  /** Everything due now, as a worker's next tick would take it. */
  const makeDue = async () => {
    await sql`update domains set next_check_at = now() where next_check_at is not null`.execute(t.db);
    await sql`update certificate_issuances set next_check_at = now() where next_check_at is not null`.execute(t.db);
    await poller.runDueOnce();
  };

  it('attaches a hostname, names the TXT record to create, and records both steps', async () => {
    const res = await attach('www.shop.example.com');
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const domain = res.body.data;
    assert.equal(domain.status, 'PENDING_VERIFICATION');
    assert.equal(domain.verification.recordName, '_plinth-challenge.www.shop.example.com');
    assert.equal(domain.verification.recordType, 'TXT');
    assert.match(domain.verification.recordValue, /^plinth-verification=[0-9a-f]{32}$/);
    const kinds = (await events()).filter((e) => e.domainId === domain.id).map((e) => e.kind);
    assert.deepEqual(kinds, ['DOMAIN_ATTACHED', 'DNS_VERIFICATION_PENDING']);
    assertError(await attach('www.shop.example.com'), 409, 'Api:Domain:ALREADY_EXISTS');
    assertError(await attach('Not A Host'), 422, 'Api:Domain:INVALID_HOSTNAME');
    assertError(await attach('10.0.0.1'), 422, 'Api:Domain:INVALID_HOSTNAME');
    assertError(await attach('api.shop.example.com', {}), 422, 'Api:Domain:REGION_REQUIRED');
  });

  it('verifies the domain once its TXT record is there, then requests its certificate from ACM as the account role', async () => {
    const domain = (await attach('api.shop.example.com')).body.data;
    const pending = (await t.call('POST', `/domains/${domain.id}/verify`)).body.data;
    assert.equal(pending.status, 'PENDING_VERIFICATION');
    assert.match(pending.lastCheckMessage, /no TXT record/);
    dns.txt.set(domain.verification.recordName, ['some-other-record', domain.verification.recordValue]);
    aws.calls.length = 0;
    const verified = (await t.call('POST', `/domains/${domain.id}/verify`)).body.data;
    assert.equal(verified.status, 'VERIFIED');
    assert.ok(verified.verifiedAt);
    assert.equal(verified.certificate.status, 'PENDING_VALIDATION');
    assert.match(verified.certificate.certificateArn, /^arn:aws:acm:us-west-2:/);
    assert.deepEqual(verified.certificate.validationRecords, [{ name: '_x1.api.shop.example.com.', type: 'CNAME', value: '_x2.acm-validations.aws.' }]);
    const request = aws.calls.find((c) => c.operation === 'RequestCertificate')!;
    assert.equal(request.input.DomainName, 'api.shop.example.com');
    assert.equal(request.input.ValidationMethod, 'DNS');
    assert.equal(request.accessKeyId, 'ASIASTANDINASSUMED');
    const kinds = (await events()).filter((e) => e.domainId === domain.id).map((e) => e.kind);
    assert.deepEqual(kinds, ['DOMAIN_ATTACHED', 'DNS_VERIFICATION_PENDING', 'DNS_VERIFIED', 'CERTIFICATE_REQUESTED']);
    const requested = (await events()).find((e) => e.kind === 'CERTIFICATE_REQUESTED' && e.domainId === domain.id)!;
    assert.equal(requested.certificateIssuanceId, verified.certificate.id);
    assert.equal(JSON.parse(requested.data).certificateArn, verified.certificate.certificateArn);

    // Worker processes follow the certificate: issued, then expiring within 30 days.
    const cert = aws.certificates.get(verified.certificate.certificateArn)!;
    Object.assign(cert, { Status: 'ISSUED', NotAfter: Math.floor(Date.now() / 1000) + 90 * DAY_S });
    await makeDue();
    assert.equal((await t.call('GET', `/domains/${domain.id}`)).body.data.certificate.status, 'ISSUED');
    Object.assign(cert, { NotAfter: Math.floor(Date.now() / 1000) + 10 * DAY_S });
    await makeDue();
    await makeDue();
    const after = (await events()).filter((e) => e.domainId === domain.id).map((e) => e.kind);
    assert.deepEqual(after.slice(-2), ['CERTIFICATE_ISSUED', 'CERTIFICATE_EXPIRING'], 'expiring is said once');
  });

  it("takes ACM's own events about its certificates through the cloud account's event ingest", async () => {
    const domain = (await attach('shop.example.com')).body.data;
    dns.txt.set(domain.verification.recordName, [domain.verification.recordValue]);
    const arn = (await t.call('POST', `/domains/${domain.id}/verify`)).body.data.certificate.certificateArn;
    const send = (name: string, change: (e: any) => void = () => {}) =>
      t.call('POST', `/cloud-accounts/${accountId}/events`, {
        token: null,
        headers: { 'x-plinth-ingest-secret': secret },
        body: awsEvent(name, (e) => {
          Object.assign(e, { account: ECS_ACCOUNT, region: 'us-west-2', resources: [arn] });
          change(e);
        }),
      });
    const issued = await send('acm-certificate-available', (e) => {
      e.detail.CertificateExpirationDate = new Date(Date.now() + 200 * DAY_S * 1000).toISOString();
    });
    assert.equal(issued.body.data.outcome, 'APPLIED');
    assert.equal((await send('acm-certificate-renewal-action-required')).body.data.outcome, 'APPLIED');
    assert.equal((await send('acm-certificate-expired')).body.data.outcome, 'APPLIED');
    const other = await send('acm-certificate-expired', (e) => {
      e.resources = [`arn:aws:acm:us-west-2:${ECS_ACCOUNT}:certificate/not-plinths`];
    });
    assert.equal(other.status, 202);
    assert.equal(other.body.data.outcome, 'UNMATCHED');
    const kinds = (await events()).filter((e) => e.domainId === domain.id).map((e) => e.kind);
    assert.deepEqual(kinds.slice(-3), ['CERTIFICATE_ISSUED', 'CERTIFICATE_RENEWAL_ACTION_REQUIRED', 'CERTIFICATE_EXPIRED']);
    assert.equal((await t.call('GET', `/domains/${domain.id}`)).body.data.certificate.status, 'EXPIRED');
  });

  it('answers the most recent events oldest first, and detaching ends a domain but keeps its events', async () => {
    const all = await events(200);
    const last3 = await events(3);
    assert.deepEqual(last3, all.slice(-3));
    assert.equal((await events(10_000)).length, all.length, 'a larger limit is clamped');
    assertError(await t.call('GET', '/domains/events'), 400);
    assertError(await t.call('GET', `/domains/events?moduleInstanceId=${instanceId}&limit=0`), 400);
    const [domain] = (await t.call('GET', `/domains?moduleInstanceId=${instanceId}`)).body.data;
    assert.equal((await t.call('DELETE', `/domains/${domain.id}`)).status, 204);
    assertError(await t.call('GET', `/domains/${domain.id}`), 404, 'Api:Domain:NOT_FOUND');
    const detached = (await events(1))[0];
    assert.equal(detached.kind, 'DOMAIN_DETACHED');
    assert.equal(detached.domainId, domain.id);
    assert.equal((await attach(domain.hostname)).status, 201, 'a detached hostname can be attached again');
  });

  it('lets a VIEWER read but not attach, and shows another organization nothing', async () => {
    const viewer = await serviceAccountCaller(t, 'VIEWER');
    assert.equal((await t.call('GET', `/domains/events?moduleInstanceId=${instanceId}`, { token: viewer.token })).status, 200);
    assertError(
      await t.call('POST', '/domains', {
        token: viewer.token,
        body: { data: { moduleInstanceId: instanceId, hostname: 'v.example.com', cloudAccountId: accountId } },
      }),
      403,
    );
    const other = await createOrganization(t);
    assertError(await t.call('GET', `/domains/events?moduleInstanceId=${instanceId}`, { headers: inOrg(other) }), 404, 'Api:ModuleInstance:NOT_FOUND');
    const [domain] = (await t.call('GET', '/domains')).body.data;
    assertError(await t.call('GET', `/domains/${domain.id}`, { headers: inOrg(other) }), 404, 'Api:Domain:NOT_FOUND');
    assertError(await t.call('POST', `/domains/${domain.id}/verify`, { headers: inOrg(other) }), 404, 'Api:Domain:NOT_FOUND');
  });
});
