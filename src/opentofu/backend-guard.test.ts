import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  FIND_BACKEND_OVERRIDES,
  overridesDeclaringBackend,
  recordedBackendProblem,
  SENSITIVE_OVERRIDE,
  WRITE_BACKEND_OVERRIDE,
  WRITE_SENSITIVE_OVERRIDE,
} from './backend-guard.ts';

function directoryWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-guard-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

const sh = (dir: string, script: string, env: Record<string, string> = {}) =>
  execFileSync('/bin/sh', ['-c', script], { cwd: dir, env: { PATH: '/usr/bin:/bin', ...env } });

const plinth = {
  address: 'http://plinth/state-backend/stack-a',
  lockAddress: 'http://plinth/state-backend/stack-a/lock',
  unlockAddress: 'http://plinth/state-backend/stack-a/lock',
};
const recorded = (type: string, config: Record<string, unknown>) => Buffer.from(JSON.stringify({ version: 3, backend: { type, config, hash: 1 } }));

describe('the backend guard', () => {
  it('finds every override file that declares a backend or cloud block, in each syntax, or is a symbolic link, and no other file', () => {
    const dir = directoryWith({
      'main.tf': 'terraform {\n  backend "s3" {}\n}\n',
      'zz_override.tf.json': '{"terraform": {"backend": {"http": {"address": "http://evil"}}}}',
      'escaped_override.tf.json': '{"terraform": {"b\\u0061ckend": {"http": {}}}}',
      'bare_override.tf': 'terraform {\n  backend http {\n  }\n}\n',
      'tight_override.tf': 'terraform {\n  backend"http"{\n  }\n}\n',
      'commented_override.tf': 'terraform {\n  backend/**/"http" {}\n}\n',
      'override.tofu': 'terraform {\n  cloud {\n    organization = "x"\n  }\n}\n',
      'fine_override.tf': 'resource "aws_cloudwatch_log_group" "backend_logs" {\n  name = "cloud-logs"\n}\n',
      'fine_override.tf.json': '{"locals": {"backends": 2, "user": "u"}}',
      'plinth_backend_override.tf': 'terraform {\n  backend "http" {}\n}\n',
      'plinth_backend_override.tofu': 'terraform {\n  backend "http" {}\n}\n',
      'notes.txt': 'backend "http" {}',
      'harmless.tf': 'locals {}\n',
    });
    symlinkSync('harmless.tf', path.join(dir, 'linked_override.tf'));
    assert.deepEqual(overridesDeclaringBackend(sh(dir, FIND_BACKEND_OVERRIDES)).sort(), [
      'bare_override.tf',
      'commented_override.tf',
      'escaped_override.tf.json',
      'linked_override.tf',
      'override.tofu',
      'tight_override.tf',
      'zz_override.tf.json',
    ]);
    assert.deepEqual(overridesDeclaringBackend(sh(directoryWith({ 'main.tf': '' }), FIND_BACKEND_OVERRIDES)), []);
  });

  it("writes Plinth's backend override under both extensions, over whatever the repository kept under those names", () => {
    const dir = directoryWith({ 'plinth_backend_override.tofu': 'terraform {\n  backend "http" { address = "http://evil" }\n}\n' });
    sh(dir, WRITE_BACKEND_OVERRIDE, { HOME: dir });
    for (const ext of ['tf', 'tofu'])
      assert.equal(readFileSync(path.join(dir, `plinth_backend_override.${ext}`), 'utf8'), 'terraform {\n  backend "http" {}\n}\n');
  });

  it('marks sensitive only the variables a .tf or .tofu file OpenTofu reads declares', () => {
    const dir = directoryWith({
      'variables.tf': 'variable "db_password" {\n  type = string\n}\nvariable token {}\n',
      'x_override.tf': 'variable "ghost" {}\n',
      'shadowed.tf': 'variable "hidden" {}\n',
      'shadowed.tofu': 'locals {}\n',
    });
    sh(dir, WRITE_SENSITIVE_OVERRIDE, { PLINTH_SENSITIVE_NAMES: 'db_password\ntoken\nghost\nundeclared\nhidden' });
    const expected = 'variable "db_password" {\n  sensitive = true\n}\nvariable "token" {\n  sensitive = true\n}\n';
    for (const ext of ['tf', 'tofu']) assert.equal(readFileSync(path.join(dir, `${SENSITIVE_OVERRIDE}.${ext}`), 'utf8'), expected);
    sh(dir, WRITE_SENSITIVE_OVERRIDE, { PLINTH_SENSITIVE_NAMES: '' });
    assert.equal(readFileSync(path.join(dir, `${SENSITIVE_OVERRIDE}.tf`), 'utf8'), '');
  });

  it("accepts only the http backend at exactly Plinth's addresses", () => {
    const good = { address: plinth.address, lock_address: plinth.lockAddress, unlock_address: plinth.unlockAddress, username: null };
    assert.equal(recordedBackendProblem(recorded('http', good), plinth), undefined);
    assert.match(recordedBackendProblem(recorded('http', { ...good, lock_address: 'http://evil/lock' }), plinth)!, /lock_address/);
    assert.match(
      recordedBackendProblem(recorded('http', { ...good, skip_cert_verification: true, headers: { a: 'b' } }), plinth)!,
      /headers, skip_cert_verification/,
    );
    assert.match(recordedBackendProblem(recorded('s3', {}), plinth)!, /"s3" backend/);
    assert.match(recordedBackendProblem(Buffer.from('{}'), plinth)!, /not Plinth's/);
    assert.match(recordedBackendProblem(Buffer.from('nope'), plinth)!, /no readable/);
  });
});
