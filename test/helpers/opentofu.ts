import type { TestAppOptions } from './app.ts';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { loadEngineConfig, type EngineConfig } from '../../src/engine/engine-config.ts';
import { FAST_ENGINE_ENV, startEngineTestApp, type EngineTestApp } from './engine.ts';

/** The stand-in OpenTofu CLI (test/opentofu/tofu-standin.mjs): plain Node, no dependencies. */
export const STANDIN = path.resolve(import.meta.dirname, '../opentofu/tofu-standin.mjs');

export interface TofuTestApp extends EngineTestApp {
  /** The API on a real port: OpenTofu's http backend speaks HTTP. */
  baseUrl: string;
}

/** startTofuTestApp is an engine test app listening on a loopback port of its own. */
export async function startTofuTestApp(options: TestAppOptions = {}): Promise<TofuTestApp> {
  const t = await startEngineTestApp(options);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  return { ...t, baseUrl: `http://127.0.0.1:${port}` };
}

export interface StackCode {
  /** The directory whose files each OpenTofu step sees; the test rewrites standin.json to change the stack. */
  dir: string;
  /** The PLINTH_TOFU_BIN the worker is given. */
  bin: string;
  write(config: unknown): void;
}

/**
 * stackCode makes a stack's code and a PLINTH_TOFU_BIN for it. The stacks these helpers make have no
 * code source, so nothing is checked out: the executable copies the code into the working directory
 * before running the stand-in, standing in for the checkout on the test side only. Steps run unsandboxed (PLINTH_SANDBOX=off):
 * the namespace sandbox shows steps nothing under test/.
 */
export function stackCode(config: unknown): StackCode {
  const root = mkdtempSync(path.join(os.tmpdir(), 'plinth-tofu-'));
  const dir = path.join(root, 'code');
  mkdirSync(dir);
  const bin = path.join(root, 'tofu');
  writeFileSync(bin, `#!/bin/sh\ncp -R '${dir}/.' . || exit 1\nexec '${process.execPath}' '${STANDIN}' "$@"\n`);
  chmodSync(bin, 0o755);
  const write = (c: unknown) => writeFileSync(path.join(dir, 'standin.json'), JSON.stringify(c, null, 2));
  write(config);
  return { dir, bin, write };
}

/** startTofuWorker starts a worker whose OpenTofu is the stand-in for `code`, talking to the test app's port. */
export function startTofuWorker(t: TofuTestApp, code: StackCode, overrides: Partial<EngineConfig> = {}) {
  const unsandboxed = loadEngineConfig({ ...FAST_ENGINE_ENV, PLINTH_SANDBOX: 'off' });
  return t.startWorker({ sandbox: unsandboxed.sandbox, tofu: { ...unsandboxed.tofu, bin: code.bin, backendUrl: t.baseUrl }, ...overrides });
}

/** createTofuStack makes a project, an environment and a stack with the default change and destroy pipelines. */
export async function createTofuStack(t: TofuTestApp, variables: Record<string, unknown> = {}) {
  const n = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const project = await t.call('POST', '/projects', { body: { data: { givenId: `p-${n}`, name: 'Infra' } } });
  const env = await t.call('POST', '/environments', { body: { data: { projectId: project.body.data.id, givenId: `e-${n}`, name: 'Prod' } } });
  const stack = await t.call('POST', '/stacks', {
    body: { data: { projectId: project.body.data.id, environmentId: env.body.data.id, name: `network-${n}`, variables } },
  });
  if (stack.status !== 201) throw new Error(JSON.stringify(stack.body));
  return stack.body.data as { id: string; serviceStateBackendWorkspace: string };
}
