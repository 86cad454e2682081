import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { generateSecretKeyText, parseSecretKey, SecretBox, SecretOpenError } from './secret-box.ts';
import { openExistingSecretBox, openSecretBox } from './key-file.ts';

const keyA = parseSecretKey(generateSecretKeyText(), 'a');
const keyB = parseSecretKey(generateSecretKeyText(), 'b');

describe('secret box', () => {
  it('opens what it sealed, and the sealed text shows neither the value nor the key', () => {
    const box = new SecretBox(keyA);
    const sealed = box.seal('ghp_secret_token', 'code_sources.token:1');
    assert.equal(box.open(sealed, 'code_sources.token:1'), 'ghp_secret_token');
    assert.doesNotMatch(sealed, /ghp_secret_token/);
    assert.match(sealed, new RegExp(`^v1\\.${keyA.id}\\.`));
    assert.notEqual(box.seal('x', 'c'), box.seal('x', 'c'), 'a fresh IV each time');
  });

  it('refuses a value sealed for another record, an altered value and an unknown key', () => {
    const box = new SecretBox(keyA);
    const sealed = box.seal('token', 'row:1');
    assert.throws(() => box.open(sealed, 'row:2'), SecretOpenError);
    const altered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    assert.throws(() => box.open(altered, 'row:1'), SecretOpenError);
    assert.throws(() => new SecretBox(keyB).open(sealed, 'row:1'), /neither PLINTH_SECRET_KEY nor in PLINTH_SECRET_KEY_PREVIOUS/);
    assert.throws(() => box.open('plain', 'row:1'), SecretOpenError);
  });

  it('after a rotation, the previous key still opens old values and marks them stale', () => {
    const old = new SecretBox(keyA).seal('token', 'row:1');
    const rotated = new SecretBox(keyB, [keyA]);
    assert.equal(rotated.open(old, 'row:1'), 'token');
    assert.equal(rotated.isStale(old), true);
    assert.equal(rotated.isStale(rotated.seal('token', 'row:1')), false);
  });

  it('derives a key per label and key id, apart from the sealing key, and none from an unknown key id', () => {
    const box = new SecretBox(keyB, [keyA]);
    const derived = box.deriveKey('audit anchor')!;
    assert.equal(derived.id, keyB.id);
    assert.equal(derived.bytes.length, 32);
    assert.notDeepEqual(derived.bytes, keyB.bytes);
    assert.notDeepEqual(box.deriveKey('another use')!.bytes, derived.bytes);
    assert.deepEqual(new SecretBox(keyB).deriveKey('audit anchor')!.bytes, derived.bytes, 'the same key and label give the same bytes');
    assert.deepEqual(box.deriveKey('audit anchor', keyA.id)!.bytes, new SecretBox(keyA).deriveKey('audit anchor')!.bytes);
    assert.equal(box.deriveKey('audit anchor', 'deadbeef'), undefined);
  });

  it('accepts 32-byte keys in hex or base64 and refuses anything else with how to make one', () => {
    assert.equal(parseSecretKey('ab'.repeat(32), 'k').bytes.length, 32);
    assert.throws(() => parseSecretKey('short', 'PLINTH_SECRET_KEY'), /PLINTH_SECRET_KEY must be 32 bytes.*openssl rand -base64 32/);
  });

  it('with no key set, generates a key file readable only by its owner and reuses it', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plinth-key-'));
    const first = openSecretBox({ secretKey: undefined, previousSecretKeys: [], dataDir });
    const stat = fs.statSync(path.join(dataDir, 'secret-key'));
    assert.equal(stat.mode & 0o777, 0o600);
    const second = openSecretBox({ secretKey: undefined, previousSecretKeys: [], dataDir });
    assert.equal(second.open(first.seal('v', 'c'), 'c'), 'v');
    assert.deepEqual(fs.readdirSync(dataDir), ['secret-key']);
    fs.rmSync(dataDir, { recursive: true });
  });

  it('opens only a key that exists when asked to make none, and says how to give it', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plinth-key-'));
    const settings = { secretKey: undefined, previousSecretKeys: [], dataDir };
    assert.throws(
      () => openExistingSecretBox(settings, 'Anchoring'),
      /^Error: Anchoring needs the installation's secret key, and none is set: give this command the PLINTH_SECRET_KEY/,
    );
    assert.deepEqual(fs.readdirSync(dataDir), [], 'no key file was made');
    const made = openSecretBox(settings);
    assert.equal(openExistingSecretBox(settings, 'Anchoring').currentKeyId, made.currentKeyId);
    const key = generateSecretKeyText();
    assert.equal(
      openExistingSecretBox({ ...settings, dataDir: path.join(dataDir, 'none'), secretKey: key }, 'Anchoring').currentKeyId,
      parseSecretKey(key, 'k').id,
    );
    fs.rmSync(dataDir, { recursive: true });
  });
});
