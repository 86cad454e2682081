import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareSemVer, parseSemVer } from './semver.ts';

const v = (text: string) => {
  const parsed = parseSemVer(text);
  assert.ok(parsed, `${text} parses`);
  return parsed;
};

describe('semantic versions', () => {
  it('accepts releases, pre-releases and build metadata', () => {
    assert.deepEqual(v('1.2.3'), { major: 1, minor: 2, patch: 3, prerelease: [] });
    assert.deepEqual(v('1.0.0-rc.1+build.5'), { major: 1, minor: 0, patch: 0, prerelease: ['rc', '1'] });
  });

  it('refuses what is not a semantic version', () => {
    for (const text of ['1', '1.2', 'v1.2.3', '01.2.3', '1.2.3-', '1.2.3-01', '1.2.3+', ' 1.2.3', '1.2.3.4', '99999999999999999999.0.0']) {
      assert.equal(parseSemVer(text), undefined, text);
    }
  });

  it('orders by precedence as semver.org lists it', () => {
    const ordered = [
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
      '1.0.1',
      '1.2.0',
      '2.0.0',
    ];
    for (let i = 1; i < ordered.length; i++) assert.equal(compareSemVer(v(ordered[i - 1]), v(ordered[i])), -1, `${ordered[i - 1]} < ${ordered[i]}`);
  });

  it('ignores build metadata for precedence', () => {
    assert.equal(compareSemVer(v('1.0.0+a'), v('1.0.0+b')), 0);
  });
});
