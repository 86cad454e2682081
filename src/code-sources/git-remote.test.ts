import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyGitFailure, gitEnv, parseBranches } from './git-remote.ts';

describe('git remote helpers', () => {
  it('the credential is an http.extraHeader in the environment only, and only http(s) transports are allowed', () => {
    const env = gitEnv({ username: 'x-access-token', password: 'tok-123' });
    const pairs = Object.keys(env).filter((k) => k.startsWith('GIT_CONFIG_KEY_')).map((k) => [env[k], env[k.replace('KEY', 'VALUE')]]);
    assert.deepEqual(pairs.find(([k]) => k === 'http.extraHeader'), ['http.extraHeader', `Authorization: Basic ${Buffer.from('x-access-token:tok-123').toString('base64')}`]);
    assert.deepEqual(pairs.find(([k]) => k === 'protocol.allow'), ['protocol.allow', 'never']);
    assert.equal(env.GIT_ALLOW_PROTOCOL, 'http:https');
    assert.equal(env.GIT_TERMINAL_PROMPT, '0');
    assert.equal(Object.keys(gitEnv(null)).filter((k) => gitEnv(null)[k].includes('Authorization')).length, 0);
  });

  it('reads ls-remote output in name order and tells a refused credential from a missing repository and an unreachable server', () => {
    const a = 'a'.repeat(40);
    const b = 'b'.repeat(40);
    assert.deepEqual(parseBranches(`${b}\trefs/heads/main\n${a}\trefs/heads/dev\n${a}\trefs/tags/v1\n`), [{ name: 'dev', commitSha: a }, { name: 'main', commitSha: b }]);
    assert.equal(classifyGitFailure("fatal: could not read Username for 'http://h': terminal prompts disabled"), 'CREDENTIAL_REFUSED');
    assert.equal(classifyGitFailure("fatal: Authentication failed for 'http://h/r.git/'"), 'CREDENTIAL_REFUSED');
    assert.equal(classifyGitFailure("fatal: repository 'http://h/r.git/' not found"), 'NOT_FOUND');
    assert.equal(classifyGitFailure('fatal: unable to access: Failed to connect to 127.0.0.1 port 9: Connection refused'), 'UNREACHABLE');
  });
});
