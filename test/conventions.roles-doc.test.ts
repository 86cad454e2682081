import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ROLES_DOC, renderRolesDoc } from '../scripts/render-roles.ts';
import { PERMISSIONS, ROLES } from '../src/platform/auth/roles.ts';

describe('docs/roles.md', () => {
  it('is what `npm run docs:roles` renders from the role matrix (run it after changing roles.ts)', () => {
    assert.equal(readFileSync(ROLES_DOC, 'utf8'), renderRolesDoc());
  });

  it('has one row per permission, and each role column says yes from the permission minimum role up', () => {
    const doc = readFileSync(ROLES_DOC, 'utf8');
    for (const [name, p] of Object.entries(PERMISSIONS)) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
      assert.ok(row, `row for ${name}`);
      const cells = row
        .split('|')
        .slice(3, 3 + ROLES.length)
        .map((c) => c.trim());
      assert.deepEqual(
        cells,
        ROLES.map((r) => (ROLES.indexOf(r) >= ROLES.indexOf(p.minRole) ? 'yes' : '-')),
      );
    }
  });
});
