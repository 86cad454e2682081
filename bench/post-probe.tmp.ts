import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startPlinthProcess } from '../test/helpers/plinth-process.ts';
const work = mkdtempSync(path.join(os.tmpdir(), 'plinth-post-probe-')); chmodSync(work, 0o755);
const token = 'plk_probe_0123456789abcdefghijklmnopqrstuvwxyz';
const prof = process.env.PROF === '1';
const p = await startPlinthProcess({ PLINTH_DATA_DIR: path.join(work, 'data'), PLINTH_PG_PORT: String(await freePort()), PLINTH_ADMIN_TOKEN: token, LOG_LEVEL: 'warn' }, { command: 'api', readyTimeoutMs: 120_000, discardStdout: true, nodeArgs: prof ? ['--cpu-prof', '--cpu-prof-dir=/tmp/apiprof'] : [] });
const call = async (method: string, url: string, body?: unknown) => {
  const res = await fetch(p.baseUrl + url, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const j = await res.json(); if (!res.ok) throw new Error(JSON.stringify(j)); return j;
};
const step = (id: string, extra = {}) => ({ id, name: id, type: 'script', with: { command: 'true' }, ...extra });
const project = await call('POST', '/projects', { data: { givenId: 'p', name: 'p' } });
const env = await call('POST', '/environments', { data: { projectId: project.data.id, givenId: 'e', name: 'e' } });
const N = 300; const stacks: string[] = [];
for (let i = 0; i < N; i++) stacks.push((await call('POST', '/stacks', { data: { projectId: project.data.id, environmentId: env.data.id, name: `s${i}`, pipelines: { change: { steps: [step('a'), step('b'), step('c', { needs: ['a', 'b'] })] } } } })).data.id);
const q = (a: number[], x: number) => a.slice().sort((m, n) => m - n)[Math.floor(x * (a.length - 1))].toFixed(2);
const who: number[] = []; const post: number[] = [];
for (let i = 0; i < N; i++) { let t0 = performance.now(); await call('GET', '/auth/whoami'); who.push(performance.now() - t0); t0 = performance.now(); await call('POST', `/stacks/${stacks[i]}/pipeline-run`, { data: {} }); post.push(performance.now() - t0); await new Promise((r) => setTimeout(r, 20)); }
console.log(`whoami p50 ${q(who, .5)} p99 ${q(who, .99)}; POST pipeline-run p50 ${q(post, .5)} p99 ${q(post, .99)} ms`);
await p.stop(60_000); rmSync(work, { recursive: true, force: true });
