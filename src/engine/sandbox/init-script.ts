/**
 * The sandbox's init: `unshare --pid --fork --mount --ipc --uts [--net]` runs it as root of the step's
 * namespaces, as pid 1 of the sandbox's new PID namespace, inside its new mount namespace (private
 * propagation: nothing mounted here is seen by the host). As root on the host it is the host's root;
 * rootless (a worker run by a normal user) the launcher adds `--user --map-root-user`, so it is root
 * only of a user namespace of its own, mapped to the worker's user, with no privilege on the host. It
 *
 * 1. enters the step's cgroups, so every process it starts is counted and limited;
 * 2. builds the step's filesystem with ONE `mount -a` of a per-step fstab (stepFstab, below): the
 *    worker's template (the mount points, a minimal `/etc`: name service, TLS roots, alternatives)
 *    bound read-only as the root; the host's device nodes null, zero, full, random, urandom and tty
 *    bound on its empty files (the step cannot add one, having no CAP_MKNOD); `/usr` (and `/bin`,
 *    `/lib*`, `/sbin` where they are directories) bound read-only; a passwd and group naming the
 *    step's uid, the host's resolver files, read-only; a `/proc` of this PID namespace (hidepid); a
 *    private `/tmp` and `/dev/shm`; the step's workspace at `/workspace`; and the runner's binds under
 *    `/plinth/` (`nosuid,nodev`, read-only unless asked otherwise). Nothing else of the host (no data
 *    directory, no other workspace, no worker file, no `/sys`). Every mount is `nosuid`, all but the
 *    device nodes `nodev`;
 * 3. pivots into that root, detaching the host's filesystem entirely;
 * 4. starts the step in a PID namespace of its own, nested in this one, with a `/proc` of its own
 *    (`unshare --pid --fork --mount-proc`): the step sees and can address only its own processes,
 *    never this init or the guard beside it. That namespace's pid 1 is `unshare --fork` (a plain fork
 *    and wait: a signal from outside reaches a pid 1 only where it has a handler, and it has none)
 *    whose child is the step's shell, a foreground child, so no signal is ignored on its entry: a
 *    step's `trap` works, and what it starts gets every signal at its default. The shell runs as the
 *    step's uid with no capabilities and no_new_privs (setuid binaries and file capabilities do
 *    nothing), under RLIMIT_NPROC (the shell's `ulimit`: `-u` in bash, `-p` in dash; should neither
 *    take, the step does not start): as root, `setpriv` gives it that uid with no supplementary group
 *    and an empty bounding set; rootless, `unshare --user --map-user` makes a user namespace of the
 *    step's own, in which it is that uid (the worker's user on the host) with no capability, and which
 *    counts its processes apart from every other step's (kernels from 5.14). The shell (`sh -s`) reads
 *    its script from fd 3 and so WAITS until the worker writes it: the sandbox is built ahead of its
 *    step (the warm pool of namespaces.ts), up to this shell, and the worker hands it a step by
 *    writing the step's script (stepScript) and closing the pipe. No tenant data is in the sandbox
 *    before that; should the worker retire it or die instead, the shell reads end-of-file (or the
 *    guard kills it) and runs nothing;
 * 5. leaves beside it a guard, a process of this init's that ignores SIGINT and SIGTERM and reads stdin,
 *    a pipe which only the worker holds. Stopping a step is a line on that pipe: `INT` or `TERM`, which
 *    the guard sends, once, to every process of the namespace but pid 1 and itself (`kill -1`): the
 *    step's shell and everything the step started, `setsid` and daemons included. A stop that comes
 *    while the sandbox is still being built, with no such process yet, waits for the first one. Nothing
 *    else signals them (the worker never signals the sandbox's process group, which would deliver each
 *    signal twice), and nothing ends the namespace while the step uses its grace: both pid 1s ignore
 *    them, and the step's shell outlives them (stepScript). When the worker dies (even by SIGKILL) or
 *    retires the sandbox, the pipe reaches end-of-file and the guard kills every process of the
 *    namespace. When the step's shell exits, the pid 1s exit with its status (1 when a signal killed
 *    it: pid 1 of a namespace cannot die of the signal again), and the kernel kills whatever the step
 *    left in the namespace, since nothing can leave a PID namespace.
 *
 * Its own environment is only PATH: the step's variables, its command and its working directory (chosen
 * by the tenant, so never given to a root process, where LD_PRELOAD and friends would mean code
 * execution) arrive on fd 3 as a script that only the unprivileged step shell reads, as its standard
 * input: when it arrives, the step's shell is already running (no process starts between the worker's
 * write and the step's first command).
 *
 * Under the `policy` network it starts inside the step's network namespace already (`nsenter` by the
 * descriptor on fd 5, and rootless into the user namespace that owns it by fd 6; it closes both first:
 * nothing of the step inherits them).
 *
 * With `PLINTH_SANDBOX_NETWORK=none` it brings up the loopback of the step's empty network namespace.
 *
 * Rootless, it first caps what the sandbox may take of the kernel's per-user counts (ROOTLESS_QUOTAS):
 * every rootless step is the worker's user on the host, and without a cap one step could take all of
 * that user's namespaces or inotify instances, and no other step could start.
 *
 * Arguments: fstab, mount point of the root, uid, process limit, cgroup.procs files, `up` to bring
 * loopback up, `rootless` when the worker is not root, and rootless the caps (pairs of a name of
 * /proc/sys/user and its value, each written in the sandbox's own user namespace).
 */
export const SANDBOX_INIT = `set -eu
exec 5<&- 6<&-
fstab=$1 root=$2 uid=$3 nproc=$4 cgroups=$5 loopback=$6 rootless=$7
shift 7
while [ $# -ge 2 ]; do if [ -w "/proc/sys/user/$1" ]; then echo "$2" > "/proc/sys/user/$1"; fi; shift 2; done
for f in $cgroups; do echo 0 > "$f"; done
if [ "$loopback" = up ]; then ip link set lo up; fi
echo plinth-step 2>/dev/null > /proc/sys/kernel/hostname || hostname plinth-step 2>/dev/null || :
mount -a -T "$fstab"
cd "$root"
pivot_root . .
umount -l .
cd /workspace
unset OLDPWD
exec 4<&0
(trap '' TERM INT
 while read -r sig; do case $sig in INT|TERM) until kill -"$sig" -1 2>/dev/null; do sleep 0.05; done;; esac; done
 kill -KILL -1) <&4 >/dev/null 2>&1 3<&- &
exec 4<&- </dev/null
ulimit -c 0; ulimit -u "$nproc" 2>/dev/null || ulimit -p "$nproc"
if [ "$rootless" = rootless ]; then
  exec unshare --user --map-user="$uid" --map-group="$uid" --pid --fork --mount-proc unshare --fork setpriv --inh-caps=-all --no-new-privs -- sh -s <&3 3<&-
fi
exec unshare --pid --fork --mount-proc unshare --fork setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- sh -s <&3 3<&-
`;

/**
 * What one rootless sandbox may take of the per-user counts of the kernel (/proc/sys/user, counted in
 * its user namespace and every one below it). Its init takes one user namespace and two of the mount
 * and PID kinds; the step may make the rest (tools such as bwrap or rootless containers make some).
 */
export const ROOTLESS_QUOTAS: Record<string, number> = {
  max_user_namespaces: 16,
  max_mnt_namespaces: 64,
  max_pid_namespaces: 64,
  max_net_namespaces: 64,
  max_ipc_namespaces: 64,
  max_uts_namespaces: 64,
  max_cgroup_namespaces: 64,
  max_time_namespaces: 64,
  max_inotify_instances: 8,
  max_inotify_watches: 8192,
  max_fanotify_groups: 8,
  max_fanotify_marks: 8192,
};

/** fstab escapes a path as fstab(5) reads it (octal for the separators and the escape itself). */
function fstabPath(p: string): string {
  return p.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

export interface FstabInput {
  template: string;
  root: string;
  /** Host directories bound read-only at the same path (`/usr`, and `/bin`, `/lib*`, `/sbin` where they are directories). */
  systemDirs: string[];
  /** Host files bound read-only into the step's `/etc`, by name (passwd, group, resolv.conf, hosts). */
  etcFiles: Array<{ source: string; name: string }>;
  workspace: string;
  tmpMb: number;
  binds: ReadonlyArray<{ source: string; target: string; writable: boolean }>;
  /** With binds: a host directory holding their mount points, bound read-only at `/plinth` (the template's root is shared and read-only). */
  bindPoints?: string;
}

/** stepFstab is the one table SANDBOX_INIT mounts, in order: the root first, everything else on it. */
export function stepFstab(o: FstabInput): string {
  const at = (inside: string) => fstabPath(o.root + inside);
  const lines = [
    `${fstabPath(o.template)} ${fstabPath(o.root)} none bind,ro,nosuid,nodev`,
    // Bound, not copied: a rootless worker cannot make a device node. A bare `bind` keeps the host's flags.
    ...TEMPLATE_DEVICES.map((d) => `/dev/${d} ${at(`/dev/${d}`)} none bind`),
    ...o.systemDirs.map((dir) => `${fstabPath(dir)} ${at(dir)} none bind,ro,nosuid,nodev`),
    ...o.etcFiles.map((f) => `${fstabPath(f.source)} ${at(`/etc/${f.name}`)} none bind,ro,nosuid,nodev`),
    `plinth-shm ${at('/dev/shm')} tmpfs mode=1777,nosuid,nodev,size=64m`,
    `proc ${at('/proc')} proc nosuid,nodev,noexec,hidepid=2`,
    `plinth-tmp ${at('/tmp')} tmpfs mode=1777,nosuid,nodev,size=${o.tmpMb}m`,
    `${fstabPath(o.workspace)} ${at('/workspace')} none bind,nosuid,nodev`,
    ...(o.binds.length && o.bindPoints ? [`${fstabPath(o.bindPoints)} ${at('/plinth')} none bind,ro,nosuid,nodev`] : []),
    ...o.binds.map((b) => `${fstabPath(b.source)} ${at(b.target)} none bind,${b.writable ? '' : 'ro,'}nosuid,nodev`),
  ];
  return lines.map((line) => `${line} 0 0\n`).join('');
}

/** The files and links every step's root starts from, made once per worker (see SANDBOX_INIT). */
export const TEMPLATE_ETC_DIRS = ['alternatives', 'ssl/certs', 'ca-certificates', 'pki/tls/certs', 'pki/ca-trust', 'crypto-policies', 'ld.so.conf.d'];
export const TEMPLATE_ETC_FILES = [
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'ld.so.cache',
  'ld.so.conf',
  'localtime',
  'protocols',
  'services',
  'mime.types',
  'os-release',
  'ca-certificates.conf',
];
export const TEMPLATE_DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/** shellAssignments renders the step's variables as `export NAME='value'` lines for the step shell to source. */
export function shellAssignments(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('');
}

function shellQuote(value: string): string {
  return `'${value.replace(/\0/g, '').replace(/'/g, `'\\''`)}'`;
}

/**
 * stepScript is what the step shell (`sh -s`) reads and runs: traps that keep the shell alive through
 * a stop while the command it waits for uses its grace, then end it once that command has (a trap runs
 * when the foreground command returns: the script goes no further, and exits 130 or 143 as a shell
 * killed by the signal would report it); the step's variables; a `cd` into its working directory
 * (made when missing; a failure ends the step with 1); then its command through `eval` of a quoted
 * word, so the command is parsed as `sh -c` would parse it and never as part of this script, with no
 * positional parameters and standard input from /dev/null. A command's own `trap` replaces these.
 */
export function stepScript(env: Record<string, string>, command: string, cwd: string): string {
  const dir = shellQuote(cwd);
  return `trap 'exit 130' INT\ntrap 'exit 143' TERM\n${shellAssignments(env)}{ cd -- ${dir} 2>/dev/null || { mkdir -p -- ${dir} && cd -- ${dir}; }; } || exit 1\neval ${shellQuote(command)} </dev/null\n`;
}
