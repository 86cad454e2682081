import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { renderSdkTypes, SDK_TYPES_FILE } from '../scripts/sdk-types.ts';

describe('the SDK types generated from /openapi.json', () => {
  it('are what the current routes produce: after a route change, run npm run sdk:types and commit the result', async () => {
    const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
    const fresh = await renderSdkTypes();
    if (committed !== fresh) {
      const a = committed.split('\n');
      const b = fresh.split('\n');
      const line = a.findIndex((l, i) => l !== b[i]);
      assert.fail(
        `packages/sdk/src/generated/openapi.ts is stale (first difference at line ${line + 1}: ${JSON.stringify(a[line])} vs ${JSON.stringify(b[line])}); run npm run sdk:types`,
      );
    }
  });
});
