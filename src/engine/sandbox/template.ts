import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { lstat, mkdir, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TEMPLATE_DEVICES, TEMPLATE_ETC_DIRS, TEMPLATE_ETC_FILES } from './init-script.ts';

const run = promisify(execFile);
const TOP_LEVEL = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32'];

/** Files of `/etc` bound per step: its own passwd and group (naming its uid), the host's resolver files. */
export const STEP_ETC_FILES = ['passwd', 'group', 'resolv.conf', 'hosts'];

/** The host directories every step sees read-only at the same path (those that are links are links in the template). */
export async function systemDirs(): Promise<string[]> {
  const dirs: string[] = [];
  for (const name of TOP_LEVEL) {
    const info = await lstat(`/${name}`).catch(() => undefined);
    if (info?.isDirectory()) dirs.push(`/${name}`);
  }
  return dirs;
}

/**
 * buildTemplate makes the directory every step's root is: bound read-only, one mount instead of a
 * process per file. It holds the mount points, `/bin`-style links of a merged-/usr host, the `/dev` links, and
 * the few `/etc` entries programs need (name service, TLS roots, alternatives, the loader's cache).
 * Nothing secret is in it: each entry is public on any host, and `/etc/ssl/private` is not taken.
 * Each worker process makes its own (`template-<pid>`); those of dead workers are removed.
 */
export function buildTemplate(root: string): Promise<string> {
  let built = templates.get(root);
  if (!built) {
    built = build(root);
    templates.set(root, built);
  }
  return built;
}

/** One template per root and process: sandboxes of one process with different settings share it. */
const templates = new Map<string, Promise<string>>();

async function build(root: string): Promise<string> {
  for (const entry of await readdir(root)) {
    const match = /^template-(\d+)$/.exec(entry);
    if (match && !existsSync(`/proc/${match[1]}`)) await rm(path.join(root, entry), { recursive: true, force: true });
  }
  const dir = path.join(root, `template-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { mode: 0o755 });
  for (const name of TOP_LEVEL) {
    const host = `/${name}`;
    const info = await lstat(host).catch(() => undefined);
    if (info?.isSymbolicLink()) await symlink(await readlink(host), path.join(dir, name));
    else if (info?.isDirectory()) await mkdir(path.join(dir, name));
  }
  for (const name of ['etc', 'dev', 'dev/shm', 'proc', 'tmp', 'workspace', 'plinth']) await mkdir(path.join(dir, name));
  // Mount points of the host's device nodes, which each sandbox binds here (stepFstab).
  for (const device of TEMPLATE_DEVICES) await writeFile(path.join(dir, 'dev', device), '', { mode: 0o644 });
  for (const [link, target] of [
    ['fd', '/proc/self/fd'],
    ['stdin', '/proc/self/fd/0'],
    ['stdout', '/proc/self/fd/1'],
    ['stderr', '/proc/self/fd/2'],
  ]) {
    await symlink(target, path.join(dir, 'dev', link));
  }
  // One tar pipe for all of /etc's entries: links stay links (they point into /usr, which the step sees).
  const etc = [...TEMPLATE_ETC_DIRS, ...TEMPLATE_ETC_FILES].map((name) => `etc/${name}`).filter((p) => existsSync(`/${p}`));
  if (etc.length) await run('sh', ['-c', 'tar -C / -cf - "$@" | tar -C "$0" -xpf -', dir, ...etc]);
  await writeFile(path.join(dir, 'etc', 'hostname'), 'plinth-step\n');
  // Mount points of the files each step gets its own of (the root is this directory, read-only).
  for (const name of STEP_ETC_FILES) await writeFile(path.join(dir, 'etc', name), '', { mode: 0o644 });
  return dir;
}
