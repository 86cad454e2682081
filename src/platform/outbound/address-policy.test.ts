import assert from 'node:assert/strict';
import os from 'node:os';
import { describe, it } from 'node:test';
import { allowEntryProblem, canonicalAddress, deniedReason, EgressDeniedError, narrowedOut, parseAllowList } from './address-policy.ts';
import { resolveAllowed, type Lookup } from './resolve.ts';

describe('the outbound address policy', () => {
  it('allows public IPv4 and IPv6 addresses, documentation ranges included', () => {
    for (const address of ['1.1.1.1', '8.8.8.8', '140.82.112.3', '198.51.100.7', '203.0.113.9', '2606:4700:4700::1111', '2001:db8::1']) {
      assert.equal(deniedReason(address), undefined, address);
    }
  });

  it('refuses loopback, private, shared, link-local, multicast and reserved ranges in both families', () => {
    const cases: Array<[string, RegExp]> = [
      ['127.0.0.1', /loopback/],
      ['127.255.0.9', /loopback/],
      ['10.255.255.53', /private/],
      ['172.16.0.1', /private/],
      ['192.168.1.1', /private/],
      ['100.64.0.1', /carrier-grade NAT/],
      ['169.254.169.254', /link-local \(cloud metadata\)/],
      ['0.0.0.0', /this host/],
      ['224.0.0.1', /multicast/],
      ['255.255.255.255', /reserved/],
      ['::1', /loopback/],
      ['::', /this host \(unspecified\)/],
      ['fd00:ec2::254', /the cloud metadata service/],
      ['168.63.129.16', /the cloud host agent/],
      ['fe80::1', /link-local/],
      ['ff02::1', /multicast/],
    ];
    for (const [address, why] of cases) assert.match(deniedReason(address) ?? 'allowed', why, address);
  });

  it('checks IPv6 forms that reach IPv4 hosts (mapped, NAT64, 6to4) as the IPv4 address they carry', () => {
    assert.deepEqual(canonicalAddress('::ffff:127.0.0.1'), { address: '127.0.0.1', family: 4 });
    assert.deepEqual(canonicalAddress('::ffff:7f00:1'), { address: '127.0.0.1', family: 4 });
    assert.deepEqual(canonicalAddress('[::ffff:a9fe:a9fe]'), { address: '169.254.169.254', family: 4 });
    assert.deepEqual(canonicalAddress('64:ff9b::a9fe:a9fe'), { address: '169.254.169.254', family: 4 });
    assert.deepEqual(canonicalAddress('2002:0a00:0001::1'), { address: '10.0.0.1', family: 4 });
    assert.match(deniedReason('::ffff:169.254.169.254')!, /link-local/);
    assert.equal(deniedReason('::ffff:1.1.1.1'), undefined, 'a mapped public address is public');
  });

  it("refuses this host's own addresses", () => {
    const own = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && !a.internal)?.address;
    if (own) assert.equal(deniedReason(own), 'an address of this host');
  });

  it("lets an operator's allowlist open networks by CIDR, IPv4 written as mapped IPv6 included", () => {
    const allow = parseAllowList(['10.1.0.0/16', '169.254.169.254', '::ffff:192.168.7.0/120', 'fd00::/8'], 'X');
    assert.equal(deniedReason('10.1.200.3', allow), undefined);
    assert.match(deniedReason('10.2.0.1', allow)!, /private/);
    assert.equal(deniedReason('169.254.169.254', allow), undefined);
    assert.equal(deniedReason('192.168.7.20', allow), undefined);
    assert.equal(deniedReason('fd12::1', allow), undefined);
  });

  it("opens loopback and link-local only by an entry inside them, and the metadata and host-agent addresses and this host's own only by naming them", () => {
    const broad = parseAllowList(['0.0.0.0/0', '::/0', 'fd00::/8'], 'X');
    assert.equal(deniedReason('10.1.2.3', broad), undefined);
    assert.match(deniedReason('127.0.0.1', broad)!, /loopback/);
    assert.match(deniedReason('169.254.169.254', broad)!, /link-local/);
    assert.match(deniedReason('0.0.0.0', broad)!, /this host/);
    assert.equal(deniedReason('fd00:ec2::254', broad), 'the cloud metadata service');
    assert.equal(deniedReason('168.63.129.16', broad), 'the cloud host agent');
    const own = Object.values(os.networkInterfaces())
      .flat()
      .find((a) => a && !a.internal && a.family === 'IPv4')?.address;
    if (own) {
      assert.equal(deniedReason(own, broad), 'an address of this host');
      assert.equal(deniedReason(own, parseAllowList([own], 'X')), undefined);
    }
    const narrow = parseAllowList(['127.0.0.0/8', '168.63.129.16'], 'X');
    assert.equal(deniedReason('127.0.0.9', narrow), undefined);
    assert.equal(deniedReason('168.63.129.16', narrow), undefined);
  });

  it("lets an allowlisted name reach private and loopback addresses, never link-local, metadata or this host's own", () => {
    const allow = parseAllowList(['git.corp.example'], 'X');
    assert.equal(deniedReason('10.0.0.5', allow, { named: true }), undefined);
    assert.equal(deniedReason('127.0.0.1', allow, { named: true }), undefined);
    assert.match(deniedReason('169.254.169.254', allow, { named: true })!, /link-local/);
    assert.equal(deniedReason('168.63.129.16', allow, { named: true }), 'the cloud host agent');
  });

  it('refuses IPv6 forms that tunnel or translate to IPv4 it cannot judge', () => {
    assert.match(deniedReason('2001:0:4136:e378:8000:63bf:3fff:fdd2')!, /Teredo/);
    assert.match(deniedReason('::ffff:0:7f00:1')!, /IPv4-translated/);
    assert.match(deniedReason('64:ff9b:1::a00:1')!, /local-use NAT64/);
  });

  it('refuses an allowlist entry that is neither a CIDR nor a host name', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0.0/x', '10.0.0.0/8/junk', 'http://git.example', 'a b', '-bad.example', 'git.example/24']) {
      assert.throws(() => parseAllowList([bad], 'PLINTH_STEP_EGRESS_ALLOW'), /PLINTH_STEP_EGRESS_ALLOW: /, bad);
    }
  });
});

describe('resolving a name for an outbound connection', () => {
  const lookupOf =
    (answers: Record<string, string[]>): Lookup =>
    async (host) =>
      (answers[host.toLowerCase().replace(/\.$/, '')] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const none = parseAllowList([], 'X');

  it('returns the one address to connect to when every address the name has is allowed', async () => {
    assert.deepEqual(await resolveAllowed('git.example', none, lookupOf({ 'git.example': ['140.82.112.3', '2606:50c0::1'] })), {
      address: '140.82.112.3',
      family: 4,
    });
  });

  it('refuses a name that resolves to any refused address, whichever comes first (DNS rebinding)', async () => {
    const lookup = lookupOf({ 'rebind.example': ['140.82.112.3', '127.0.0.1'], 'meta.example': ['169.254.169.254'] });
    await assert.rejects(
      resolveAllowed('rebind.example', none, lookup),
      (error: unknown) => error instanceof EgressDeniedError && error.address === '127.0.0.1',
    );
    await assert.rejects(resolveAllowed('meta.example', none, lookup), /connecting to meta\.example \(169\.254\.169\.254\) is not allowed: link-local/);
  });

  it('resolves once: the address checked is the address returned, whatever a second answer would say', async () => {
    let calls = 0;
    const flipping: Lookup = async () => (calls++ === 0 ? [{ address: '140.82.112.3', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    assert.deepEqual(await resolveAllowed('flip.example', none, flipping), { address: '140.82.112.3', family: 4 });
    assert.equal(calls, 1);
  });

  it('checks IP literals without a lookup, bracketed IPv6 included', async () => {
    const never: Lookup = async () => assert.fail('no lookup for a literal');
    await assert.rejects(resolveAllowed('[::1]', none, never), /loopback/);
    await assert.rejects(resolveAllowed('::ffff:10.0.0.1', none, never), /private/);
    assert.deepEqual(await resolveAllowed('1.1.1.1', none, never), { address: '1.1.1.1', family: 4 });
  });

  it('lets an allowlisted host name through whatever it resolves to, subdomains by a wildcard', async () => {
    const allow = parseAllowList(['git.corp.example', '*.registry.corp.example'], 'X');
    const lookup = lookupOf({ 'git.corp.example': ['10.0.0.5'], 'eu.registry.corp.example': ['10.0.0.6'], 'registry.corp.example': ['10.0.0.7'] });
    assert.equal((await resolveAllowed('git.corp.example', allow, lookup)).address, '10.0.0.5');
    assert.equal((await resolveAllowed('EU.Registry.corp.example.', allow, lookup)).address, '10.0.0.6');
    await assert.rejects(resolveAllowed('registry.corp.example', allow, lookup), /private/);
  });

  it('says so when a name does not resolve', async () => {
    await assert.rejects(resolveAllowed('nowhere.example', none, lookupOf({})), /nowhere\.example does not resolve/);
  });

  it('narrows by a second list: a listed name or a listed network passes, anything else is refused with the reason', () => {
    const narrow = parseAllowList(['registry.opentofu.org', '*.github.com', '203.0.113.0/24'], 'egressAllow');
    assert.equal(narrowedOut('registry.opentofu.org', '198.51.100.9', narrow), undefined);
    assert.equal(narrowedOut('codeload.github.com', '198.51.100.10', narrow), undefined);
    assert.equal(narrowedOut('anything.example', '203.0.113.5', narrow), undefined, 'its address lies in a listed network');
    assert.equal(narrowedOut('[::ffff:203.0.113.5]', '::ffff:203.0.113.5', narrow), undefined, 'as the IPv4 address it carries');
    assert.equal(narrowedOut('evil.example', '198.51.100.11', narrow), "not in the execution environment's egress allowlist");
    assert.equal(
      narrowedOut('github.com', '198.51.100.12', narrow),
      "not in the execution environment's egress allowlist",
      'a wildcard is for subdomains only',
    );
    assert.equal(
      narrowedOut('registry.opentofu.org', '198.51.100.9', parseAllowList([], 'x')),
      "not in the execution environment's egress allowlist",
      'an empty list allows nothing',
    );
  });

  it('says what is wrong with one entry, and nothing of a good one', () => {
    for (const good of ['10.0.0.0/8', '2001:db8::/32', 'git.corp.example', '*.corp.example', '192.0.2.1'])
      assert.equal(allowEntryProblem(good), undefined, good);
    assert.equal(allowEntryProblem('10.0.0.0/33'), 'is not a valid CIDR');
    assert.equal(allowEntryProblem('http://x'), 'is neither a CIDR nor a host name');
    assert.equal(allowEntryProblem('  '), 'is empty');
  });
});
