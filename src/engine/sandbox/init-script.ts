/**
 * The sandbox's init: `unshare --pid --fork --mount --ipc --uts [--net]` runs it as root, as pid 1 of the
 * step's new PID namespace, inside the step's new mount namespace (private propagation: nothing mounted
 * here is seen by the host). It
 *
 * 1. enters the step's cgroups, so every process it starts is counted and limited;
 * 2. builds the step's filesystem on a fresh tmpfs: `/usr` (and `/bin`, `/lib*`, `/sbin` where they
 *    are directories) bound read-only, a minimal `/etc` (the worker's template: name service, TLS
 *    roots, alternatives; a passwd naming the step's uid), a `/dev` of null, zero, full, random, urandom
 *    and tty (device nodes copied from the template: the step cannot make others, it has no
 *    CAP_MKNOD), a `/proc` of the new PID namespace (hidepid: the root init and guard are not even
 *    listed, their command lines included), a private `/tmp` and `/dev/shm`, and the step's
 *    workspace at `/workspace`, and the runner's binds under `/plinth/` (`nosuid,nodev`, read-only
 *    unless asked otherwise); nothing else of the host (no data directory, no other workspace, no
 *    worker file, no `/sys`);
 * 3. makes that root read-only and pivots into it, detaching the host's filesystem entirely;
 * 4. starts the step as its own uid with no capabilities, no supplementary groups and no_new_privs
 *    (setuid binaries do nothing), under RLIMIT_NPROC;
 * 5. stays as pid 1 beside a guard. The guard blocks reading a pipe only the worker holds; when the worker
 *    dies (even by SIGKILL) the pipe reaches end-of-file and the guard kills every process of the
 *    namespace. SIGTERM and SIGINT to the init (the worker stopping the step) are passed to every process. When the
 *    step's shell exits the init exits with its status, and the kernel kills whatever the step left in
 *    the namespace: `setsid`, double forks and daemons included, since none can leave a PID namespace.
 *
 * Its own environment is only PATH: the step's variables (chosen by the tenant, so never given to a
 * root process, where LD_PRELOAD and friends would mean code execution) arrive on fd 3 as shell
 * assignments that the unprivileged step shell sources.
 *
 * Arguments: mount point, workspace, uid, process limit, cgroup.procs files, template, command, working
 * directory, size of /tmp in MiB, then four per bind: `ro`|`rw`, `dir`|`file`, host source, target
 * (checked by binds.ts: under `/plinth/`, none inside another, so every mount point is made on the
 * fresh tmpfs and never inside a bound host directory).
 */
export const SANDBOX_INIT = String.raw`set -eu
root=$1 workspace=$2 uid=$3 nproc=$4 cgroups=$5 template=$6 command=$7 cwd=$8 tmpsize=$9
shift 9
for f in $cgroups; do echo 0 > "$f"; done
echo plinth-step > /proc/sys/kernel/hostname
mount -t tmpfs -o mode=0755,nosuid,size=16m plinth-root "$root"
cd "$root"
cp -a "$template"/. .
cp -L /etc/resolv.conf /etc/hosts etc/ 2>/dev/null || :
for d in usr bin sbin lib lib32 lib64 libx32; do
  if [ -d "/$d" ] && [ ! -L "/$d" ]; then mount --bind -o ro,nosuid,nodev "/$d" "$d"; fi
done
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nplinth:x:%s:%s:plinth step:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' "$uid" "$uid" > etc/passwd
printf 'root:x:0:\nplinth:x:%s:\nnogroup:x:65534:\n' "$uid" > etc/group
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m plinth-shm dev/shm
mount -t proc -o nosuid,nodev,noexec,hidepid=2 proc proc
mount -t tmpfs -o mode=1777,nosuid,nodev,size="$tmpsize"m plinth-tmp tmp
mount --bind -o nosuid,nodev "$workspace" workspace
while [ $# -ge 4 ]; do
  if [ "$2" = dir ]; then mkdir -p -- ".$4"; else mkdir -p -- "$(dirname -- ".$4")"; : > ".$4"; fi
  if [ "$1" = rw ]; then mount --bind -o nosuid,nodev -- "$3" ".$4"; else mount --bind -o ro,nosuid,nodev -- "$3" ".$4"; fi
  shift 4
done
mount -o remount,ro,nosuid "$root"
pivot_root . .
umount -l .
cd /workspace
unset OLDPWD
exec 4<&0
prlimit --nproc="$nproc" --core=0 setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \
  sh -c 'eval "$(cat <&3)"; exec 3<&-; mkdir -p -- "$2" && cd -- "$2" || exit 1; exec sh -c "$1"' plinth-step "$command" "$cwd" </dev/null 4<&- &
child=$!
(trap '' TERM; while read -r _; do :; done; kill -KILL -1) <&4 >/dev/null 2>&1 3<&- &
exec 3<&- 4<&- </dev/null
trap 'kill -TERM -1 2>/dev/null' TERM
trap 'kill -INT -1 2>/dev/null' INT
set +e
wait "$child"; code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
exit "$code"
`;

/** The files and links every step's root starts from, made once per worker (see SANDBOX_INIT). */
export const TEMPLATE_ETC_DIRS = ['alternatives', 'ssl/certs', 'ca-certificates', 'pki/tls/certs', 'pki/ca-trust', 'crypto-policies', 'ld.so.conf.d'];
export const TEMPLATE_ETC_FILES = ['nsswitch.conf', 'host.conf', 'gai.conf', 'ld.so.cache', 'ld.so.conf', 'localtime', 'protocols', 'services', 'mime.types', 'os-release', 'ca-certificates.conf'];
export const TEMPLATE_DEVICES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/** shellAssignments renders the step's variables as `export NAME='value'` lines for the step shell to source. */
export function shellAssignments(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    .map(([name, value]) => `export ${name}='${value.replace(/\0/g, '').replace(/'/g, `'\\''`)}'\n`)
    .join('');
}
