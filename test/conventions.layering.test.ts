import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { folderCycles, folderImportGraph } from '../scripts/import-graph.ts';

describe('the folder layering of src/', () => {
  it('has no import cycle between folders: no file imports a folder that imports its own back', () => {
    assert.deepEqual(folderCycles(folderImportGraph()), []);
  });

  it('keeps platform/ below the domains: it imports none of them', () => {
    assert.deepEqual([...(folderImportGraph().get('platform') ?? [])], []);
  });

  it('finds a cycle through any kind of import, type-only and dynamic included', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-layering-'));
    try {
      for (const folder of ['a', 'b', 'c']) mkdirSync(path.join(dir, folder));
      writeFileSync(path.join(dir, 'a/a.ts'), "import type { B } from '../b/b.ts';\n");
      writeFileSync(path.join(dir, 'b/b.ts'), "export type B = 1;\nexport const load = () => import('../c/c.ts');\n");
      writeFileSync(path.join(dir, 'c/c.ts'), "export { a } from '../a/a.ts';\nimport './c-local.ts';\n");
      assert.deepEqual(folderCycles(folderImportGraph(dir)), [['a', 'b', 'c']]);
      writeFileSync(path.join(dir, 'c/c.ts'), "import './c-local.ts';\n");
      assert.deepEqual(folderCycles(folderImportGraph(dir)), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
