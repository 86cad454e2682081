// The folder-level import graph of src/: which top-level folder (a domain, `platform`, or `(root)` for
// src/*.ts) imports which. test/conventions.layering.test.ts asserts it has no cycle and that platform
// imports no domain. Run it (`node --import tsx scripts/import-graph.ts`) to print the graph.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stronglyConnectedComponents } from '../src/platform/graph.ts';

export const SRC_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

/** Static `import … from '…'`, `export … from '…'`, side-effect `import '…'` and dynamic `import('…')`. */
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return entry.endsWith('.ts') ? [full] : [];
  });
}

/** The top-level folder of src/ a file is in, or `(root)` for a file directly in src/. */
function folderOf(srcDir: string, file: string): string {
  const parts = path.relative(srcDir, file).split(path.sep);
  return parts.length > 1 ? parts[0] : '(root)';
}

export type FolderGraph = Map<string, Set<string>>;

/** folderImportGraph maps each folder to the other folders its files import (tests beside the source included). */
export function folderImportGraph(srcDir = SRC_DIR): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const file of sourceFiles(srcDir)) {
    const from = folderOf(srcDir, file);
    if (!graph.has(from)) graph.set(from, new Set());
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const to = folderOf(srcDir, path.resolve(path.dirname(file), match[1]));
      if (to !== from) graph.get(from)!.add(to);
    }
  }
  return graph;
}

/** The strongly connected components of more than one folder: each is a set of folders that import each other. */
export function folderCycles(graph: FolderGraph): string[][] {
  return stronglyConnectedComponents([...graph.keys()].sort(), graph)
    .filter((component) => component.length > 1)
    .map((component) => component.sort());
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const graph = folderImportGraph();
  for (const [from, to] of [...graph].sort()) process.stdout.write(`${from} -> ${[...to].sort().join(', ')}\n`);
  const cycles = folderCycles(graph);
  process.stdout.write(cycles.length ? `cycles: ${cycles.map((c) => c.join(' <-> ')).join('; ')}\n` : 'no cycles\n');
}
