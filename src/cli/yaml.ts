// YAML for the commands that read a document or print `-o yaml`. The yaml package is loaded on first
// use: it is some sixty modules, more than everything else a user command needs to start.

import { createRequire } from 'node:module';

type Yaml = typeof import('yaml');

let yaml: Yaml | undefined;

function load(): Yaml {
  yaml ??= createRequire(import.meta.url)('yaml') as Yaml;
  return yaml;
}

/** parseYaml parses a YAML (or JSON) document. */
export function parseYaml(text: string): unknown {
  return load().parse(text);
}

/** toYaml prints a value as a YAML document. */
export function toYaml(value: unknown): string {
  return load().stringify(value);
}
