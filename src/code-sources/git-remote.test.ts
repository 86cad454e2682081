import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gitEnv } from './git-remote.ts';

describe('git remote helpers', () => {
  it('the credential is an http.extraHeader in the environment only, and only http(s) transports are allowed', () => {
    const env = gitEnv({ username: 'x-access-token', password: 'tok-123' });
    const pairs = Object.keys(env)
      .filter((k) => k.startsWith('GIT_CONFIG_KEY_'))
      .map((k) => [env[k], env[k.replace('KEY', 'VALUE')]]);
    assert.deepEqual(
      pairs.find(([k]) => k === 'http.extraHeader'),
      ['http.extraHeader', `Authorization: Basic ${Buffer.from('x-access-token:tok-123').toString('base64')}`],
    );
    assert.deepEqual(
      pairs.find(([k]) => k === 'protocol.allow'),
      ['protocol.allow', 'never'],
    );
    assert.equal(env.GIT_ALLOW_PROTOCOL, 'http:https');
    assert.equal(env.GIT_TERMINAL_PROMPT, '0');
    assert.equal(Object.keys(gitEnv(null)).filter((k) => gitEnv(null)[k].includes('Authorization')).length, 0);
  });
});
