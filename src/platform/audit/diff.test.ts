import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { allowlistProblems, auditDiff, cleanText, originOf } from './diff.ts';

describe('the audit diff: an allowlist of body fields', () => {
  it('keeps the allowlisted fields of data, nested ones included, and nothing else', () => {
    const body = { data: { name: 'n', token: 't', source: { ref: 'main', secret: 's' }, value: { sensitive: 'x' } } };
    assert.deepEqual(auditDiff(body, ['name', 'source.ref']), { name: 'n', source: { ref: 'main' } });
  });

  it('keeps nothing without an allowlist, without a data object, or when no allowlisted field was sent', () => {
    assert.equal(auditDiff({ data: { name: 'n' } }, undefined), null);
    assert.equal(auditDiff({ data: { name: 'n' } }, []), null);
    assert.equal(auditDiff({ name: 'n' }, ['name']), null);
    assert.equal(auditDiff({ data: 'n' }, ['name']), null);
    assert.equal(auditDiff({ data: { other: 1 } }, ['name']), null);
    assert.equal(auditDiff(undefined, ['name']), null);
  });

  it('keeps scalars and lists of scalars, never an object or list of objects sent in an allowlisted place', () => {
    const body = { data: { name: { token: 't' }, role: ['a', { secret: 's' }], tags: ['a', 'b'], n: 2, on: false, gone: null } };
    assert.deepEqual(auditDiff(body, ['name', 'role', 'tags', 'n', 'on', 'gone']), { tags: ['a', 'b'], n: 2, on: false, gone: null });
  });

  it('steps into each item of a list with []', () => {
    const body = { data: { steps: [{ id: 'a', with: { command: 'secret' } }, 'junk', { id: 'b' }] } };
    assert.deepEqual(auditDiff(body, ['steps[].id']), { steps: [{ id: 'a' }, null, { id: 'b' }] });
  });

  it('reads only own fields: an inherited key is not a field of the body', () => {
    const data = Object.create({ name: 'inherited' }) as Record<string, unknown>;
    assert.equal(auditDiff({ data }, ['name']), null);
  });

  it('cuts a diff past 16 KiB down to its field names', () => {
    const diff = auditDiff({ data: { a: 'x'.repeat(4000), b: 'y'.repeat(4000), c: 'z'.repeat(4000), d: 'w'.repeat(4000), e: 'v'.repeat(4000) } }, [
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
    assert.deepEqual(diff, { truncated: true, fields: ['a', 'b', 'c', 'd', 'e'] });
  });
});

describe('texts in the audit log keep no credentials', () => {
  it('drops the user-info, query and fragment of every URL in a text', () => {
    assert.equal(cleanText('https://alice:ghp_secret@github.com/org/repo.git'), 'https://github.com/org/repo.git');
    assert.equal(cleanText('https://github.com/org/repo.git?access_token=ghp_secret#ghp'), 'https://github.com/org/repo.git');
    assert.equal(cleanText('HTTPS://x-access-token:t@host:8443/a'), 'HTTPS://host:8443/a');
    assert.equal(cleanText('see https://u:p@a.example/x and ssh://git:pw@b.example/y?k=v'), 'see https://a.example/x and ssh://b.example/y');
    assert.equal(cleanText('https://host?token=secret'), 'https://host');
  });

  it('takes everything up to the last @ ahead of the query as user-info, whatever a password holds', () => {
    assert.equal(cleanText('https://alice:pa/ss@w@rd@host/repo'), 'https://host/repo');
    assert.equal(cleanText('https://alice:p#ss@host/repo'), 'https://');
    assert.equal(cleanText('https://alice:p?ss@host/repo'), 'https://');
    assert.equal(cleanText('https://[::1]:8080/x'), 'https://[::1]:8080/x');
  });

  it('leaves a text without a URL as it is', () => {
    assert.equal(cleanText('Project ☃ 1: alice@example.com'), 'Project ☃ 1: alice@example.com');
  });

  it('takes a scheme only at a word boundary, and of at most 32 characters', () => {
    assert.equal(cleanText('xhttps://u:p@h/a'), 'xhttps://h/a');
    assert.equal(cleanText('1https://u:p@h/a'), '1https://u:p@h/a');
    assert.equal(cleanText('_https://u:p@h/a'), '_https://u:p@h/a');
    assert.equal(cleanText('-git+ssh://u:p@h/a'), '-git+ssh://h/a');
    assert.equal(cleanText(`${'b'.repeat(31)}://u:p@h/a`), `${'b'.repeat(31)}://h/a`);
    assert.equal(cleanText(`-${'b'.repeat(40)}://u:p@h/a`), `-${'b'.repeat(40)}://u:p@h/a`);
    assert.equal(cleanText(`${'b'.repeat(20)}-${'c'.repeat(20)}://u:p@h/a`), `${'b'.repeat(20)}-${'c'.repeat(20)}://h/a`);
    assert.equal(cleanText('://u:p@h a://u:p@h ://'), '://u:p@h a://h ://');
  });

  it('cleans texts of many word boundaries in time linear in their length', () => {
    const dashes = 'a-'.repeat(2048);
    const bodies = [dashes, `${dashes.slice(0, -4)}://x`, 'a.'.repeat(2048), '://'.repeat(1365)];
    const started = performance.now();
    for (const text of bodies) {
      const diff = auditDiff({ data: { name: text, tags: Array.from({ length: 200 }, () => text) } }, ['name', 'tags']);
      assert.deepEqual(diff, { truncated: true, fields: ['name', 'tags'] });
    }
    const elapsed = performance.now() - started;
    // Linear takes a few ms; the backtracking this replaced took seconds. The bound leaves room for a loaded machine.
    assert.ok(elapsed < 1000, `${bodies.length} bodies of 201 texts of 4096 characters took ${Math.round(elapsed)} ms`);
  });
});

describe("a webhook's URL keeps only its origin", () => {
  it('keeps the scheme, host and port of a URL whose path is its secret, and nothing of what is not a URL', () => {
    assert.equal(originOf('https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX'), 'https://hooks.slack.com');
    assert.equal(originOf('https://discord.com/api/webhooks/123/tok-en'), 'https://discord.com');
    assert.equal(originOf('https://u:p@example.webhook.office.com:8443/webhookb2/abc?x=1#f'), 'https://example.webhook.office.com:8443');
    assert.equal(originOf('http://[::1]:9000/hook'), 'http://[::1]:9000');
    assert.equal(originOf('https://hooks.slack.com\\services\\T0\\B0\\secret'), 'https://hooks.slack.com');
    assert.equal(originOf('https://alice:p#ss@host/repo'), 'https://');
    assert.equal(originOf('https://host%2Fsecret/x'), 'https://');
    assert.equal(originOf('hooks.slack.com/services/T0/B0/secret'), undefined);
    assert.equal(originOf(' https://h/secret'), undefined);
  });

  it('applies to a field named with :origin, and to each item of a list', () => {
    const body = { data: { webhookUrl: 'https://hooks.slack.com/services/T0/B0/secret', urls: ['https://a.example/s', 'nope'], retentionDays: 30 } };
    assert.deepEqual(auditDiff(body, ['webhookUrl:origin', 'retentionDays']), { webhookUrl: 'https://hooks.slack.com', retentionDays: 30 });
    assert.deepEqual(auditDiff(body, ['urls:origin']), null, 'a list with an item that is not a URL is left out');
    assert.deepEqual(auditDiff({ data: { urls: ['https://a.example/s'] } }, ['urls:origin']), { urls: ['https://a.example'] });
    assert.deepEqual(auditDiff({ data: { webhookUrl: null } }, ['webhookUrl:origin']), { webhookUrl: null }, 'a webhook removed');
    assert.equal(auditDiff({ data: { webhookUrl: 'secret-without-scheme' } }, ['webhookUrl:origin']), null);
  });
});

describe("an audit allowlist and its route's body schema", () => {
  const body = Type.Object({
    data: Type.Object({
      name: Type.String(),
      token: Type.String({ writeOnly: true }),
      source: Type.Optional(Type.Object({ ref: Type.String() })),
      steps: Type.Array(Type.Object({ id: Type.String() })),
      either: Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })]),
      webhookUrl: Type.String(),
    }),
  });

  it('accepts fields of the schema, nested, in a list or in a branch of a union', () => {
    assert.deepEqual(allowlistProblems(body, ['name', 'source.ref', 'steps[].id', 'either.b']), []);
  });

  it('names a field the schema does not have, and a write-only one', () => {
    assert.deepEqual(allowlistProblems(body, ['nmae', 'source.path', 'steps.id', 'token']), [
      'nmae is not a field of its body',
      'source.path is not a field of its body',
      'steps.id is not a field of its body',
      'token is write-only (a secret)',
    ]);
    assert.deepEqual(allowlistProblems(undefined, ['name']), ['name is not a field of its body']);
  });

  it("takes a mode after a field, and keeps a webhook's URL to its origin", () => {
    assert.deepEqual(allowlistProblems(body, ['webhookUrl:origin', 'name:origin']), []);
    assert.deepEqual(allowlistProblems(body, ['webhookUrl', 'name:path', 'token:origin']), [
      "webhookUrl is a webhook's URL, whose path may be its secret: keep only its origin (webhookUrl:origin)",
      'name:path names a mode that does not exist (origin)',
      'token is write-only (a secret)',
    ]);
  });
});
