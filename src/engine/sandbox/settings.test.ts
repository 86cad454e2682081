import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { shellAssignments, stepFstab, stepScript } from './init-script.ts';
import { loadSandboxSettings } from './settings.ts';

describe('sandbox settings', () => {
  it('default to auto, a network of its own behind the egress policy, 512 processes, 2048 MiB, one CPU, 10 GiB of disk in a million files', () => {
    const s = loadSandboxSettings({}, undefined);
    assert.equal(s.mode, 'auto');
    assert.equal(s.network, 'policy');
    assert.deepEqual(s.egress.endpoints, []);
    assert.deepEqual(s.limits, { maxProcesses: 512, memoryMb: 2048, cpus: 1, diskMb: 10_240, diskFiles: 1_000_000 });
    assert.deepEqual([s.uidBase, s.uidCount], [200_000, 50_000]);
    assert.equal(s.poolSize, 16);
    assert.equal(loadSandboxSettings({}, undefined, 4).poolSize, 4, 'as many warm sandboxes as the worker runs steps at once');
  });

  it('read every knob, and refuse a value that is not one', () => {
    const s = loadSandboxSettings(
      {
        PLINTH_SANDBOX: 'off',
        PLINTH_SANDBOX_NETWORK: 'none',
        PLINTH_STEP_MAX_PROCESSES: '64',
        PLINTH_STEP_MEMORY_MB: '256',
        PLINTH_STEP_CPUS: '0.5',
        PLINTH_STEP_DISK_MB: '100',
        PLINTH_STEP_DISK_FILES: '5000',
        PLINTH_SANDBOX_UID_BASE: '300000',
        PLINTH_SANDBOX_UID_COUNT: '10',
        PLINTH_SANDBOX_POOL: '0',
      },
      '/srv/work',
    );
    const { egress, ...rest } = s;
    assert.deepEqual(rest, {
      mode: 'off',
      network: 'none',
      limits: { maxProcesses: 64, memoryMb: 256, cpus: 0.5, diskMb: 100, diskFiles: 5000 },
      uidBase: 300_000,
      uidCount: 10,
      workRoot: '/srv/work',
      poolSize: 0,
    });
    assert.deepEqual(egress.endpoints, []);
    const allowing = loadSandboxSettings({ PLINTH_STEP_EGRESS_ALLOW: '10.1.0.0/16, git.corp.example *.registry.corp.example' }, undefined, 1, [
      'http://127.0.0.1:8080',
      'https://plinth.example',
    ]);
    assert.deepEqual(allowing.egress.allow.hosts, ['git.corp.example', '*.registry.corp.example']);
    assert.ok(allowing.egress.allow.networks.check('10.1.2.3', 'ipv4'));
    assert.deepEqual(allowing.egress.endpoints, [
      { host: '127.0.0.1', port: 8080 },
      { host: 'plinth.example', port: 443 },
    ]);
    assert.throws(
      () => loadSandboxSettings({ PLINTH_STEP_EGRESS_ALLOW: '10.0.0.0/33' }, undefined),
      /PLINTH_STEP_EGRESS_ALLOW: "10.0.0.0\/33" is not a valid CIDR/,
    );
    assert.throws(
      () => loadSandboxSettings({ PLINTH_STEP_EGRESS_ALLOW: 'http://x' }, undefined),
      /PLINTH_STEP_EGRESS_ALLOW: "http:\/\/x" is neither a CIDR nor a host name/,
    );
    assert.throws(() => loadSandboxSettings({ PLINTH_SANDBOX_NETWORK: 'open' }, undefined), /PLINTH_SANDBOX_NETWORK must be one of policy, none, host/);
    assert.throws(() => loadSandboxSettings({ PLINTH_SANDBOX_POOL: '-1' }, undefined), /PLINTH_SANDBOX_POOL must be an integer from 0/);
    assert.throws(() => loadSandboxSettings({ PLINTH_SANDBOX: 'bwrap' }, undefined), /PLINTH_SANDBOX must be one of auto, namespaces, off/);
    assert.throws(() => loadSandboxSettings({ PLINTH_STEP_MAX_PROCESSES: '1.5' }, undefined), /PLINTH_STEP_MAX_PROCESSES must be a positive integer/);
    assert.throws(() => loadSandboxSettings({ PLINTH_STEP_CPUS: '0' }, undefined), /PLINTH_STEP_CPUS/);
    assert.throws(() => loadSandboxSettings({ PLINTH_STEP_DISK_MB: '1e3x' }, undefined), /PLINTH_STEP_DISK_MB must be a positive integer/);
    assert.throws(() => loadSandboxSettings({ PLINTH_SANDBOX_UID_BASE: '0' }, undefined), /PLINTH_SANDBOX_UID_BASE/);
  });
});

describe('the step environment handed to the sandbox', () => {
  it('arrives byte for byte through sh, quotes, newlines and $ included, and never as code', () => {
    const env = { A: "it's", B: 'two\nlines', C: '$(touch /tmp/pwned) `x` $HOME', 'BAD NAME': 'dropped' };
    const script = `${shellAssignments(env)}printf '%s|' "$A" "$B" "$C"; env | grep -c '^BAD' || true`;
    const out = spawnSync('sh', ['-c', script], { env: {}, encoding: 'utf8' }).stdout;
    assert.equal(out, `it's|two\nlines|$(touch /tmp/pwned) \`x\` $HOME|0\n`);
  });
});

describe('the step spec and the mount table handed to the sandbox', () => {
  it('runs the command in its working directory (made when missing) after its variables, quotes included, with no positional parameters and no standard input', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'plinth-step-script-'));
    try {
      const text = stepScript({ A: 'x' }, `printf '%s|' "it's $A" "$#" "$(pwd)"; cat`, "dir with 'quote'");
      const run = spawnSync('sh', ['-s'], { input: `${text}`, cwd: dir, env: {}, encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, `it's x|0|${path.join(dir, "dir with 'quote'")}|`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ends with the status of the command, and with 1 when its working directory cannot be made', () => {
    assert.equal(spawnSync('sh', ['-s'], { input: stepScript({}, 'exit 7', '.'), env: {} }).status, 7);
    assert.equal(spawnSync('sh', ['-s'], { input: stepScript({}, 'false', '.'), env: {} }).status, 1);
    assert.equal(spawnSync('sh', ['-s'], { input: stepScript({}, 'echo ran', 'x'), cwd: '/proc', env: {}, encoding: 'utf8' }).stdout, '');
  });

  it('escapes spaces, tabs, newlines and backslashes of paths so that no path can add a field or a line', () => {
    const fstab = stepFstab({ template: '/w/t', root: '/w/a b/root', systemDirs: ['/usr'], etcFiles: [], workspace: '/w/a\nb\\c', tmpMb: 8, binds: [] });
    const lines = fstab.trim().split('\n');
    for (const line of lines) assert.equal(line.split(' ').length, 6, line);
    assert.ok(
      lines.some((l) => l.startsWith('/w/a\\012b\\134c /w/a\\040b/root/workspace none bind,nosuid,nodev')),
      fstab,
    );
    assert.ok(lines[0].startsWith('/w/t /w/a\\040b/root none bind,ro,nosuid,nodev '), 'the template is the read-only root, mounted first');
    assert.ok(lines.includes('/dev/null /w/a\\040b/root/dev/null none bind 0 0'), "the host's device nodes are bound, keeping their own flags");
  });
});
