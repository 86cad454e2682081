import { NamespaceSandbox } from '../src/engine/sandbox/namespaces.ts';
import { UnisolatedSandbox } from '../src/engine/sandbox/unisolated.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';
const N = 100;
const off = process.env.OFF === '1';
const settings = loadSandboxSettings({ PLINTH_SANDBOX: off ? 'off' : 'namespaces', PLINTH_SANDBOX_POOL: '4' }, '/tmp/sb', 4);
const sb = off ? new UnisolatedSandbox(settings) : new NamespaceSandbox(settings);
await sb.start();
await new Promise((r) => setTimeout(r, 500));
const lastOut: number[] = [], exitAt: number[] = [], closeAt: number[] = [], startAt: number[] = [];
for (let i = 0; i < N; i++) {
  const ws = await sb.open();
  const t0 = performance.now();
  const p = ws.spawn({ command: 'echo x', env: { PATH: '/usr/bin:/bin' } });
  let tOut = 0, tExit = 0;
  p.child.stdout!.on('data', () => (tOut = performance.now()));
  p.child.stderr!.resume();
  p.child.on('exit', () => (tExit = performance.now()));
  await new Promise((r) => p.child.on('close', r));
  const tClose = performance.now();
  startAt.push(tOut - t0); exitAt.push(tExit - tOut); closeAt.push(tClose - tOut);
  p.kill();
  await ws.dispose();
  await new Promise((r) => setTimeout(r, 20));
}
const q = (a: number[], p: number) => a.slice().sort((x, y) => x - y)[Math.floor(p * (a.length - 1))].toFixed(2);
console.log(`${off ? 'off' : 'namespaces'}: spawn→output p50 ${q(startAt, .5)} p99 ${q(startAt, .99)}; output→exit p50 ${q(exitAt, .5)} p99 ${q(exitAt, .99)}; output→close p50 ${q(closeAt, .5)} p99 ${q(closeAt, .99)} ms`);
await sb.close();
