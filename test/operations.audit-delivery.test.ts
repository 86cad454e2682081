import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { deliverDueWebhooks, signDelivery, type DeliveryOptions } from '../src/audit/audit-delivery.ts';
import { startTestApp, TEST_SECRETS, type TestApp } from './helpers/app.ts';
import { createOrganization, inOrg } from './helpers/callers.ts';
import { ALLOW_EVERYTHING, EMPTY_ALLOW_LIST } from '../src/platform/outbound/address-policy.ts';

const SECRET = 'a-webhook-signing-secret';
const OPTIONS: DeliveryOptions = { outbound: { allow: ALLOW_EVERYTHING }, retryBaseMs: 60_000, timeoutMs: 5000, batchSize: 500 };

describe('audit webhook delivery', () => {
  let t: TestApp;
  let org: string;
  let receiver: Server;
  let url: string;
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const answers = [500, 200];

  before(async () => {
    t = await startTestApp();
    org = await createOrganization(t, 'Delivered');
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(answers.shift() ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await t.close();
  });

  it('delivers the rows in chain order, signed, retried after a failure, with every attempt in the delivery log', async () => {
    const patch = await t.call('PATCH', '/audit-settings', {
      headers: inOrg(org),
      body: { data: { webhookUrl: url, webhookSecret: SECRET, retentionDays: 30 } },
    });
    assert.equal(patch.status, 200, JSON.stringify(patch.body));
    assert.deepEqual(patch.body.data, { retentionDays: 30, webhookUrl: url, webhookSecretSet: true, deliveredSeq: 0 });
    assert.equal(JSON.stringify(patch.body).includes(SECRET), false);

    await deliverDueWebhooks(t.db, TEST_SECRETS, OPTIONS);
    assert.equal(received.length, 1, 'the first attempt reached the webhook');
    await deliverDueWebhooks(t.db, TEST_SECRETS, OPTIONS);
    assert.equal(received.length, 1, 'the retry waits for its backoff');
    const { next_attempt_at } = await t.db.selectFrom('audit_settings').select('next_attempt_at').where('organization_id', '=', org).executeTakeFirstOrThrow();
    assert.ok(next_attempt_at.getTime() > Date.now() + 50_000, 'the retry is a backoff away');
    // The backoff has passed.
    await t.db.updateTable('audit_settings').set({ next_attempt_at: new Date() }).where('organization_id', '=', org).execute();
    await deliverDueWebhooks(t.db, TEST_SECRETS, OPTIONS);
    assert.equal(received.length, 2);

    const { headers, body } = received[1];
    assert.equal(headers['x-plinth-signature'], signDelivery(SECRET, String(headers['x-plinth-timestamp']), body));
    const delivered = JSON.parse(body);
    assert.equal(delivered.organizationId, org);
    assert.deepEqual(
      delivered.events.map((e: any) => e.seq),
      delivered.events.map((_: unknown, i: number) => i + 1),
    );
    assert.ok(delivered.events.some((e: any) => e.action === 'audit-setting.update'));
    assert.equal(body.includes(SECRET), false, 'the signing secret is not in the diff of the change that set it');

    const log = await t.call('GET', '/audit-webhook-deliveries', { headers: inOrg(org) });
    assert.deepEqual(
      log.body.data.map((d: any) => [d.attempt, d.statusCode, d.delivered]),
      [
        [2, 200, true],
        [1, 500, false],
      ],
    );
    const settings = await t.call('GET', '/audit-settings', { headers: inOrg(org) });
    assert.equal(settings.body.data.deliveredSeq, delivered.events.at(-1).seq);
  });

  it('refuses to deliver to a private address unless the operator allows it', async () => {
    await t.call('PATCH', '/audit-settings', { headers: inOrg(org), body: { data: { retentionDays: 31 } } });
    await deliverDueWebhooks(t.db, TEST_SECRETS, { ...OPTIONS, outbound: { allow: EMPTY_ALLOW_LIST } });
    const log = await t.call('GET', '/audit-webhook-deliveries?limit=1', { headers: inOrg(org) });
    assert.equal(log.body.data[0].delivered, false);
    assert.equal(log.body.data[0].error, "the webhook's address is not allowed: loopback");
  });
});
