import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertSameBrowser, newFlowBinding } from './flow-binding.ts';

describe('the browser binding of a Git flow', () => {
  it("is a cookie for the callback's path as the browser sees it, under PLINTH_PUBLIC_URL's own path", () => {
    assert.equal(newFlowBinding('OAUTH', 'n1', 600, 'http://127.0.0.1:8080').cookie.path, '/gitoauth/callback');
    assert.equal(newFlowBinding('APP_INSTALL', 'n1', 600, 'https://tools.example/plinth/').cookie.path, '/plinth/gitapp/callback');
    assert.equal(newFlowBinding('OAUTH', 'n1', 600, 'https://tools.example/plinth').cookie.maxAgeSeconds, 600);
  });

  it('accepts the return leg only with the cookie of its own flow', () => {
    const one = newFlowBinding('OAUTH', 'nonce-1', 600, 'http://h');
    const two = newFlowBinding('OAUTH', 'nonce-2', 600, 'http://h');
    assert.notEqual(one.cookie.name, two.cookie.name, 'two flows in one browser keep a cookie each');
    assert.doesNotThrow(() => assertSameBrowser(one.hash, { [one.cookie.name]: one.cookie.value }, 'nonce-1'));
    for (const cookies of [{}, { [one.cookie.name]: two.cookie.value }, { [two.cookie.name]: two.cookie.value }]) {
      assert.throws(() => assertSameBrowser(one.hash, cookies, 'nonce-1'), /started in another browser/);
    }
    assert.throws(
      () => assertSameBrowser(undefined, { [one.cookie.name]: one.cookie.value }, 'nonce-1'),
      /another browser/,
      'a state without a binding is refused',
    );
  });
});
