import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter } from '../engine/log-bytes.ts';
import { maskSecrets, MaskTooLargeError, MAX_MASKED_FORM_BYTES, secretPieces } from './masking.ts';

/** The log of `output` as stored (records rebuilt into text), with `secrets` masked. */
function logged(secrets: string[], output: string): string {
  const splitter = new LineSplitter();
  const masker = maskSecrets(secrets).forStream();
  const records = splitter.push(Buffer.from(output, 'utf8')).concat(splitter.end());
  return records
    .flatMap((r) => masker.push(r))
    .concat(masker.end())
    .map((r) => r.bytes.toString('utf8') + (r.partial ? '' : '\n'))
    .join('');
}

const PEM = [
  '-----BEGIN PRIVATE KEY-----',
  'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj',
  'MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu',
  'NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ',
  'ok',
  '-----END PRIVATE KEY-----',
].join('\n');

describe('maskSecrets', () => {
  it('masks a value as it is, every time it appears', () => {
    assert.equal(logged(['hunter2-secret'], 'pw=hunter2-secret, again hunter2-secret\n'), 'pw=***, again ***\n');
  });

  it('masks the JSON-escaped form of a value with a quote, a backslash and control characters (JSON.stringify)', () => {
    assert.equal(logged(['pa"ss\\word<\x01\b>'], '{"password":"pa\\"ss\\\\word<\\u0001\\b>"}\n'), '{"password":"***"}\n');
  });

  it("masks the form Go's JSON encoder writes: <, > and & escaped too", () => {
    assert.equal(logged(['a<b>&c'], '{"@message":"value \\"a\\u003cb\\u003e\\u0026c\\""}\n'), '{"@message":"value \\"***\\""}\n');
  });

  it("masks the Go-quoted form OpenTofu's plan prints (%q: \\x01 and \\t, not JSON's \\u0001)", () => {
    assert.equal(logged(['ab\x01c\td"e'], '      + password = "ab\\x01c\\td\\"e"\n'), '      + password = "***"\n');
  });

  it('masks the HCL-escaped form: quote, backslash, newline, and templates doubled ($${, %%{)', () => {
    const value = 'x${a}"y\\z\nw%{b}';
    assert.equal(logged([value], 'password = "x$${a}\\"y\\\\z\\nw%%{b}"\n'), 'password = "***"\n');
  });

  it('masks the POSIX single-quoted form (set -x, ${var@Q})', () => {
    assert.equal(logged(["it's secret"], "+ curl -u 'it'\\''s secret' https://x\n"), "+ curl -u '***' https://x\n");
  });

  it('masks the backslash form of bash printf %q', () => {
    assert.equal(logged(['a b$c(d)'], 'token: a\\ b\\$c\\(d\\)\n'), 'token: ***\n');
    assert.equal(logged(['~home#1'], '\\~home#1\n'), '***\n');
  });

  it("masks the $'…' form bash printf %q uses for control characters", () => {
    assert.equal(logged(["l1\tl2'x"], "arg=$'l1\\tl2\\'x'\n"), "arg=$'***'\n");
  });

  it('masks each line of a PEM key printed line by line (a heredoc in the plan), short lines excepted', () => {
    const heredoc = `      + key = <<-EOT\n${PEM.split('\n')
      .map((l) => `            ${l}`)
      .join('\n')}\n        EOT\n`;
    const lines = logged([PEM], heredoc).split('\n');
    assert.deepEqual(lines.slice(1, 7), ['            ***', '            ***', '            ***', '            ***', '            ok', '            ***']);
  });

  it('masks a multi-line value printed on one line with \\n escapes, and its lines printed alone', () => {
    assert.equal(logged([PEM], `"key": ${JSON.stringify(PEM)}\n`), '"key": "***"\n');
    assert.equal(logged(['first line\r\n  second line  '], 'a second line\n'), 'a ***\n');
  });

  it('masks each string of a JSON value (a map variable) as OpenTofu prints them, an attribute per line', () => {
    const secret = JSON.stringify({ user: 'admin-user', password: 'p@ss "w0rd"', port: 5432 });
    assert.equal(
      logged([secret], '      + password = "p@ss \\"w0rd\\""\n      + user     = "admin-user"\n'),
      '      + password = "***"\n      + user     = "***"\n',
    );
  });

  it('leaves values, and lines of values, under 3 bytes alone', () => {
    assert.equal(logged(['ab', 'x\nyz\nlong-enough'], 'ab x yz long-enough\n'), 'ab x yz ***\n');
  });

  it('masks 200 secrets in a 1 MiB line quickly, each cut by a record boundary', () => {
    const secrets = Array.from({ length: 200 }, (_, i) => `s3cret-${i}-"q"\\b\nline-${i}-of-it`);
    let line = '';
    let embedded = 0;
    for (let boundary = 16_384; boundary <= 1024 * 1024; boundary += 16_384) {
      line += 'The quick brown fox jumps over the lazy dog. '.repeat(400).slice(0, boundary - 10 - line.length);
      line += JSON.stringify(secrets[embedded++ % secrets.length]).slice(1, -1);
    }
    const started = performance.now();
    const masked = logged(secrets, `${line}\n`);
    const elapsed = performance.now() - started;
    assert.equal(masked.split('***').length - 1, embedded);
    assert.ok(!masked.includes('s3cret-'));
    assert.ok(elapsed < 3000, `took ${elapsed.toFixed(0)} ms`);
  });

  it('takes apart a JSON secret holding more strings than a call takes arguments', () => {
    const many = JSON.stringify(Array.from({ length: 150_000 }, (_, i) => `k${i}`));
    assert.ok(secretPieces([many]).includes('k149999'));
  });

  it('refuses sensitive values that would make more than its limit of text to mask, rather than log them', () => {
    const huge = JSON.stringify(Array.from({ length: 40_000 }, (_, i) => `secret-${i}`));
    assert.throws(
      () => maskSecrets([huge]),
      (error: unknown) => error instanceof MaskTooLargeError && error.bytes > MAX_MASKED_FORM_BYTES,
    );
  });
});
