// npm's postinstall: compiles the sandbox launcher (native/plinth-sandbox.c) into build/plinth-sandbox,
// and the spawner (native/plinth-spawner.c) into build/plinth-spawner.
// Optional: without a C compiler (or off Linux) it says so and the worker builds each sandbox with the
// shell init instead (PLINTH_SANDBOX_LAUNCHER, docs/engine.md). A static binary when the C library's
// static archive is installed: no dynamic loader to run at every step. Against musl (`musl-gcc`) when
// it is installed and CC is not set: glibc's start-up probes the CPU's caches with some fifty CPUID
// instructions, each a trap to the hypervisor on a virtual machine (0.7 ms of CPU per step measured
// on the 2-core benchmark machine, against 0.07 ms for the musl build); musl's start-up does none.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

if (process.platform !== 'linux') {
  console.log(`plinth: no sandbox launcher on ${process.platform} (steps need Linux namespaces)`);
  process.exit(0);
}
// The launcher, then the spawner that starts it (native/plinth-spawner.c; without it, workers use the
// JavaScript spawner). The spawner starts once per worker: its C library's start-up does not matter.
build('plinth-sandbox', 'the sandbox launcher', 'workers will build sandboxes with the shell init');
build('plinth-spawner', 'the sandbox spawner', 'workers will start sandboxes with the JavaScript spawner');

function build(name, what, fallback) {
  const source = path.join(root, 'native', `${name}.c`);
  const target = path.join(root, 'build', name);
  mkdirSync(path.dirname(target), { recursive: true });
  const flags = ['-O2', '-Wall', '-Wextra', '-Werror', '-o', `${target}.tmp`, source];
  // Each attempt in turn until one compiles: [compiler, extra flags].
  const attempts = process.env.CC
    ? [[process.env.CC, ['-static']], [process.env.CC, []]]
    : [['musl-gcc', ['-static']], ['cc', ['-static']], ['cc', []]];
  let result;
  let used;
  for (const [compiler, extra] of attempts) {
    result = spawnSync(compiler, [...extra, ...flags], { encoding: 'utf8' });
    used = [compiler, ...extra].join(' ');
    if (result.status === 0) break;
  }
  if (result.status !== 0) {
    const why = result.error ? result.error.message : result.stderr.trim().split('\n').slice(-3).join('; ');
    console.log(`plinth: ${what} was not built (${why}); ${fallback}`);
    return;
  }
  renameSync(`${target}.tmp`, target);
  console.log(`plinth: built ${what} ${path.relative(root, target)} (${used})`);
}
