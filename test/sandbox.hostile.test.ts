import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { workDirectory } from '../src/engine/sandbox/workspaces.ts';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createOrganization, userCaller } from './helpers/callers.ts';
import { isSandboxMachinery, ownUid, ROOTLESS } from './helpers/sandbox.ts';
import {
  createStack,
  hostProcesses,
  logLines,
  processTree,
  spawnWorkerProcess,
  startEngineTestApp,
  stepsOf,
  tempDir,
  triggerRun,
  waitFor,
  waitForLine,
  type EngineTestApp,
} from './helpers/engine.ts';

/**
 * The uid range of step sandboxes: the default (PLINTH_SANDBOX_UID_BASE, PLINTH_SANDBOX_UID_COUNT) as
 * root; rootless (this suite is run again as a normal user, test/sandbox.rootless.test.ts) a range of
 * its own, so that the two runs never count each other's steps.
 */
const SANDBOX_UIDS = ROOTLESS ? { from: 260_000, to: 310_000 } : { from: 200_000, to: 250_000 };
const MAX_PROCESSES = 64;
const DISK_MB = 64;
const DISK_FILES = 5_000;
/**
 * Processes of this suite's worker's steps: under it (a step cannot leave its PID namespace, whose
 * init is under the worker's spawner; another `npm test` beside this one has workers of its own), of
 * a sandbox uid (as the process sees itself: rootless steps are the worker's user on the host), but
 * the sandbox's own `unshare`s and the waiting shell of a sandbox built ahead (its uid's only other
 * process, `sh`, a child of the sandbox's pid 1), which has run nothing yet and runs its step's
 * script once the worker writes it.
 */
function sandboxProcesses(workerPid: number) {
  const mine = new Set(processTree(workerPid));
  const all = hostProcesses().filter((p) => mine.has(p.pid));
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const ofSandboxUids = all
    .map((p) => ({ ...p, uid: ownUid(p.pid, p.uid) ?? -1 }))
    .filter((p) => p.uid >= SANDBOX_UIDS.from && p.uid < SANDBOX_UIDS.to && !isSandboxMachinery(p.comm));
  const perUid = new Map<number, number>();
  for (const p of ofSandboxUids) perUid.set(p.uid, (perUid.get(p.uid) ?? 0) + 1);
  const waiting = (p: (typeof ofSandboxUids)[number]) => p.comm === 'sh' && perUid.get(p.uid) === 1 && isSandboxMachinery(byPid.get(p.ppid)?.comm ?? '');
  return ofSandboxUids.filter((p) => !waiting(p));
}
/** Host processes whose command line is exactly `words`, wherever they are (a process that escaped its sandbox included). */
function processesRunning(words: string[]) {
  const wanted = `${words.join('\0')}\0`;
  return hostProcesses().filter((p) => {
    try {
      return readFileSync(`/proc/${p.pid}/cmdline`, 'utf8') === wanted;
    } catch {
      return false;
    }
  });
}

/**
 * Prefixes an attack that would harm the host if it ran unisolated (kill -1 as root kills every process
 * of the machine, a fork bomb starves it): it refuses to run unless it is inside a sandbox uid.
 */
const onlyIfSandboxed = (command: string) => `if [ "$(id -u)" -lt ${SANDBOX_UIDS.from} ]; then echo "NOT SANDBOXED: refusing to run"; exit 97; fi\n${command}`;

/**
 * The attacks a hostile tenant's step makes on its host, each run as a real step by a MEMBER of a
 * fresh organization through the API, against a real `plinth worker` process whose own environment holds the admin token and the database
 * URL with its password, as a production worker's does.
 */
describe('a hostile step is contained by the sandbox', () => {
  let t: EngineTestApp;
  let worker: ChildProcess;
  /** The worker's, by default: claims of one host share it, so that no two running steps share a uid. */
  const workRoot = workDirectory(undefined, 'plinth-sandboxes');
  let member: string;
  let rival: string;
  const dbUrl = new URL(process.env.PLINTH_TEST_DATABASE_URL!);
  const secrets = () => [t.adminToken, decodeURIComponent(dbUrl.password)].filter((s) => s.length >= 8);

  /** runAttack runs `command` as a one-step pipeline of `token`'s organization and returns its run, step and output. */
  async function runAttack(command: string, token = member, timeoutSeconds = 20) {
    assert.equal(worker.exitCode, null, 'the worker exited: PLINTH_SANDBOX=namespaces, and this host cannot isolate steps?');
    const stack = await createStack(t, [{ id: 'attack', command, timeoutSeconds }], token);
    const run = await triggerRun(t, stack.id, {}, token);
    const done = await waitFor(
      `run ${run.id} to end`,
      async () => {
        const r = (await t.call('GET', `/pipeline-runs/${run.id}`, { token })).body.data;
        return ['SUCCEEDED', 'FAILED'].includes(r.status) ? r : undefined;
      },
      timeoutSeconds * 1000 + 10_000,
      100,
    );
    const [step] = await stepsOf(t, run.id, token);
    const output = (await logLines(t, step.id, token)).join('\n');
    for (const secret of secrets()) assert.ok(!output.includes(secret), `a platform secret reached the step's output:\n${output}`);
    return { run: done, step, output };
  }

  before(async () => {
    t = await startEngineTestApp();
    const orgA = await createOrganization(t, 'Tenant A');
    const orgB = await createOrganization(t, 'Tenant B');
    member = (await userCaller(t, 'mallory@a.test', 'MEMBER', orgA)).token;
    rival = (await userCaller(t, 'victim@b.test', 'MEMBER', orgB)).token;
    // namespaces, not auto: should this host not isolate, the worker refuses to start and no attack runs.
    // Small process and CPU limits keep the fork bomb from slowing the other test files down.
    worker = spawnWorkerProcess(
      t,
      {
        PLINTH_WORKER_CONCURRENCY: '8',
        PLINTH_SANDBOX: 'namespaces',
        PLINTH_SANDBOX_UID_BASE: String(SANDBOX_UIDS.from),
        PLINTH_SANDBOX_UID_COUNT: String(SANDBOX_UIDS.to - SANDBOX_UIDS.from),
        PLINTH_STEP_MAX_PROCESSES: String(MAX_PROCESSES),
        PLINTH_STEP_CPUS: '0.5',
        PLINTH_STEP_DISK_MB: String(DISK_MB),
        PLINTH_STEP_DISK_FILES: String(DISK_FILES),
      },
      { inheritedDescriptor: true },
    );
  });
  after(async () => {
    worker.kill('SIGKILL');
    await t.close();
  });

  it("runs the step as an unprivileged uid of its own, neither root nor the worker's user", async () => {
    const { run, output } = await runAttack('id -u; id -G');
    assert.equal(run.status, 'SUCCEEDED', output);
    const [uid, groups] = output.split('\n').map((l) => l.trim());
    assert.ok(Number(uid) >= SANDBOX_UIDS.from && Number(uid) < SANDBOX_UIDS.to, `uid ${uid}`);
    assert.equal(groups, uid, 'no supplementary groups');
  });

  it('holds no capability in any set, cannot gain one (no_new_privs), dumps no core, has the process limit, and ignores no signal', async () => {
    const { run, output } = await runAttack(
      'grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|SigIgn):" /proc/self/status; grep -E "^Max (processes|core file size)" /proc/self/limits',
    );
    assert.equal(run.status, 'SUCCEEDED', output);
    // Rootless, the bounding set is the full one of the step's own user namespace, which it cannot use:
    // it is not root there, and no_new_privs keeps file capabilities and setuid from raising any set.
    const sets = ROOTLESS ? ['CapInh', 'CapPrm', 'CapEff', 'CapAmb'] : ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'];
    for (const set of sets) assert.match(output, new RegExp(`^${set}:\\s+0+$`, 'm'), `${set} is empty:\n${output}`);
    assert.match(output, /^NoNewPrivs:\s+1$/m);
    assert.match(output, new RegExp(`^Max processes\\s+${MAX_PROCESSES}\\s+${MAX_PROCESSES}\\s`, 'm'));
    assert.match(output, /^Max core file size\s+0\s+0\s/m);
    // Nothing ignored on entry: the step's own traps work, and what it starts gets every signal at its default.
    assert.match(output, /^SigIgn:\s+0+$/m, output);
  });

  it("cannot read the worker's environment, nor any other process's", async () => {
    const { output } = await runAttack(
      [
        'tr "\\0" "\\n" < /proc/$PPID/environ; echo "ppid environ: $?"',
        'for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ 2>/dev/null; done',
        'env',
        `echo "worker visible: $(test -e /proc/${worker.pid}/environ && echo yes || echo no)"`,
      ].join('\n'),
    );
    assert.doesNotMatch(output, /PLINTH_ADMIN_TOKEN|DATABASE_URL|PLINTH_SECRET_KEY|PGPASSWORD/);
    // As root, the parent (the step namespace's pid 1) is root's and unreadable; rootless it is the
    // step's own `unshare --fork`, whose environment is the sandbox's PATH and its directory alone.
    if (ROOTLESS) assert.match(output, /^PATH=\/usr\/sbin:\/usr\/bin:\/sbin:\/bin\nPWD=\/workspace\nppid environ: 0$/m);
    else assert.match(output, /ppid environ: [1-9]/, 'the parent (the sandbox init) is not readable');
    assert.match(output, /worker visible: no/);
    assert.match(output, /^HOME=\/workspace$/m);
  });

  it('sees no data directory, no worker file and no host directory; system directories are read-only', async () => {
    const { output } = await runAttack(
      [
        'ls / | tr "\\n" " "; echo',
        'find / -xdev \\( -name pg-password -o -name admin-token -o -name "postmaster.pid" \\) 2>/dev/null | sed "s/^/found: /"',
        // Where the test's own database keeps its password on the host (scripts/test.ts), and the usual data directory.
        'cat /tmp/plinth-test-*/pg-password .plinth/pg-password /work/*/.plinth/pg-password 2>/dev/null',
        'for d in /work /home /root /var /opt /run /srv /sys /proc/1/root/work; do ls "$d" >/dev/null 2>&1 && echo "listed $d"; done',
        'touch /usr/x /etc/x 2>/dev/null && echo "wrote system dirs"',
        'echo done',
        // The walk of every visible file takes 1 s alone, but at 0.5 CPU on a loaded machine it took 12 s.
      ].join('\n'),
      member,
      60,
    );
    assert.match(output, /^bin dev etc lib\S* .*proc .*tmp usr workspace $/m);
    assert.doesNotMatch(output, /^found: |^listed |wrote system dirs/m);
    assert.match(output, /^done$/m);
  });

  it("cannot connect to the platform's database with anything it can read", async () => {
    const { output } = await runAttack(
      [
        `for user in postgres plinth "$(id -un)"; do PGCONNECT_TIMEOUT=5 psql -w -h 127.0.0.1 -p ${dbUrl.port} -U "$user" -d postgres -Atc "select 'connected'" 2>&1; echo "psql as $user: $?"; done`,
      ].join('\n'),
    );
    if (/psql: not found|command not found/.test(output)) return;
    assert.doesNotMatch(output, /^connected$/m);
    assert.match(output, /psql as postgres: 2/);
  });

  it('cannot read or list a sibling workspace of another organization', async () => {
    const victim = await createStack(t, [{ id: 'victim', command: 'echo "tenant-b-secret-$PLINTH_RUN_ID" > "$HOME/secret"; echo written; sleep 4' }], rival);
    const victimRun = await triggerRun(t, victim.id, {}, rival);
    const victimStep = await waitFor('the victim step to run', async () => (await stepsOf(t, victimRun.id, rival)).find((s) => s.status === 'RUNNING'));
    await waitForLine(t, victimStep.id, /^written$/, 15_000, rival);
    const { output } = await runAttack(
      [
        'ls -la "$(dirname "$PWD")"',
        'cat "$(dirname "$PWD")"/*/secret 2>&1',
        'find / -path /proc -prune -o -name secret -print 2>/dev/null | sed "s/^/found: /"',
        'grep -rs tenant-b-secret /workspace /tmp /etc /usr/local 2>/dev/null | head -3',
      ].join('\n'),
    );
    assert.doesNotMatch(output, /tenant-b-secret|^found: /m);
    await waitFor('the victim run to succeed', async () =>
      (await t.call('GET', `/pipeline-runs/${victimRun.id}`, { token: rival })).body.data.status === 'SUCCEEDED' ? true : undefined,
    );
  });

  it("sees and signals only its own processes: not the host's, not the worker", async () => {
    const { run, output } = await runAttack(
      onlyIfSandboxed(
        [
          'ps -e -o pid=,user=,comm= | sed "s/^/ps: /"',
          `kill -0 ${worker.pid} 2>/dev/null; echo "kill worker: $?"`,
          'kill -0 1 2>/dev/null; echo "kill init: $?"',
          'kill -KILL 1 2>/dev/null; sleep 0.2; test -e /proc/1/stat && echo "init survived"',
          'kill -KILL -1 2>/dev/null; echo "kill all: survived"',
        ].join('\n'),
      ),
    );
    assert.doesNotMatch(output, /NOT SANDBOXED/);
    const ps = output.split('\n').filter((l) => l.startsWith('ps: '));
    assert.ok(ps.length > 0 && ps.length < 10, `only the step's own processes:\n${ps.join('\n')}`);
    assert.ok(!ps.some((l) => /node|postgres|plinth worker/.test(l)), ps.join('\n'));
    assert.match(output, /kill worker: 1/);
    // Rootless, the step's pid 1 is its own user's (kill -0 says yes), but no signal from inside ends a pid 1.
    if (!ROOTLESS) assert.match(output, /kill init: 1/);
    assert.match(output, /^init survived$/m);
    // `kill -1` reached only the step's own processes (its shell included, so the run fails): the worker lives.
    assert.ok(['SUCCEEDED', 'FAILED'].includes(run.status));
    assert.equal(worker.exitCode, null, 'the worker is alive');
  });

  it('leaves no process behind: setsid, double forks and nohup die with the step', async () => {
    // Durations of this run's own, looked for on the whole host: an escaped process would be anywhere.
    const base = 600 + Math.floor(Math.random() * 100_000) * 4;
    const durations = [base, base + 1, base + 2, base + 3].map(String);
    const { run, output } = await runAttack(
      [
        `setsid sleep ${durations[0]} &`,
        `(sleep ${durations[1]} &) &`,
        `nohup sh -c "sleep ${durations[2]}" >/dev/null 2>&1 &`,
        `sh -c "setsid sh -c \\"sleep ${durations[3]} & exit 0\\" &"`,
        'sleep 0.3; echo spawned',
      ].join('\n'),
    );
    assert.equal(run.status, 'SUCCEEDED', output);
    const left = () => durations.flatMap((d) => processesRunning(['sleep', d]));
    await waitFor('every process of the step to be gone', async () => (left().length === 0 ? true : undefined), 5_000);
  });

  it('holds no descriptor but its standard ones, whatever the worker inherited from what started it', async () => {
    const { run, output } = await runAttack('ls /proc/self/fd | tr "\\n" " "');
    assert.equal(run.status, 'SUCCEEDED', output);
    // 0, 1 and 2, and 3: the directory `ls` reads. The worker's fd 7, a pipe it inherited, is not there.
    assert.equal(output.trim(), '0 1 2 3');
  });

  it('leaves nothing behind in files it made unreadable, and the worker runs the next step', async () => {
    const marker = `unreadable-${Date.now()}`;
    const { run, output } = await runAttack(`mkdir -p ${marker}/d/sub && echo x > ${marker}/d/sub/f && chmod 000 ${marker}/d ${marker} && echo made`);
    assert.equal(run.status, 'SUCCEEDED', output);
    const left = () => execFileSync('find', [workRoot, '-name', marker], { encoding: 'utf8' }).trim();
    await waitFor('the unreadable files to be removed', async () => (left() === '' ? true : undefined), 10_000);
    assert.equal((await runAttack('echo still working')).run.status, 'SUCCEEDED');
  });

  it('cannot have the worker change the modes of a host directory through a link it leaves', async () => {
    // A directory of the worker's user that only it may write, named by a link in a workspace whose
    // entries the worker cannot delete without first making it writable again.
    const victim = tempDir();
    chmodSync(victim, 0o500);
    const marker = `link-${Date.now()}`;
    const { run, output } = await runAttack(`ln -s ${victim} ${marker} && chmod 555 /workspace && echo linked`);
    assert.equal(run.status, 'SUCCEEDED', output);
    const left = () => execFileSync('find', [workRoot, '-name', marker], { encoding: 'utf8' }).trim();
    await waitFor('the link to be removed', async () => (left() === '' ? true : undefined), 10_000);
    assert.equal(statSync(victim).mode & 0o777, 0o500, 'the linked directory keeps its mode');
  });

  it("rootless, cannot take all of the worker user's user namespaces: its sandbox has a share of its own", {
    skip: !ROOTLESS && 'as root, each step counts against its own uid',
  }, async () => {
    const { output } = await runAttack(
      'for i in $(seq 1 40); do unshare --user sleep 10 2>/dev/null & done; sleep 1; echo "held $(ps -e -o comm= | grep -c sleep)"; kill $(jobs -p) 2>/dev/null; true',
    );
    const held = Number(/held (\d+)/.exec(output)?.[1]);
    assert.ok(held > 0 && held < 16, `at most the sandbox's share (15) held at once, saw ${held}:\n${output}`);
    assert.equal((await runAttack('echo another step starts')).run.status, 'SUCCEEDED');
  });

  it('a fork bomb is held to the process limit, fails, and the worker runs the next step', async () => {
    // Per uid: steps of other test files may be running beside this one, each under its own uid.
    // The step's shell forks once, before the bomb exists (`(bomb) &`: a pipeline would fork twice,
    // and on a busy machine the bomb could fill the limit between the two), then becomes the sleep
    // (`exec sleep`: once the bomb holds every process the limit allows, it could not fork one), so
    // the step ends by its timeout.
    let peak = 0;
    const sampler = setInterval(() => {
      const perUid = new Map<number, number>();
      for (const p of sandboxProcesses(worker.pid!)) perUid.set(p.uid, (perUid.get(p.uid) ?? 0) + 1);
      peak = Math.max(peak, ...perUid.values());
    }, 200);
    const { run, step, output } = await runAttack(onlyIfSandboxed('bomb() { bomb | bomb & }; (bomb) & exec sleep 30'), member, 5).finally(() =>
      clearInterval(sampler),
    );
    assert.doesNotMatch(output, /NOT SANDBOXED/);
    assert.equal(run.status, 'FAILED', output);
    assert.equal(step.error.code, 'Engine:Step:TIMED_OUT', `${step.error.message}\n${output}`);
    assert.ok(peak <= MAX_PROCESSES, `at most PLINTH_STEP_MAX_PROCESSES (${MAX_PROCESSES}) processes at once, saw ${peak}`);
    // The shell says when the kernel refused it a process: the limit was reached, and held.
    assert.match(output, /Cannot fork|Resource temporarily unavailable/);
    await waitFor('the bomb to be gone', async () => (sandboxProcesses(worker.pid!).length === 0 ? true : undefined), 10_000);
    const next = await runAttack('echo still working');
    assert.equal(next.run.status, 'SUCCEEDED');
    assert.match(next.output, /still working/);
  });

  it('filling the disk past PLINTH_STEP_DISK_MB, behind a directory made unreadable, is killed and fails with DISK_LIMIT', async () => {
    const started = Date.now();
    const { run, step, output } = await runAttack(
      `mkdir -p hide/deep && head -c ${(DISK_MB + 32) * 1024 * 1024} /dev/urandom > hide/deep/fill && chmod 000 hide/deep hide && echo filled && exec sleep 30`,
    );
    assert.equal(run.status, 'FAILED', output);
    assert.equal(step.error.code, 'Engine:Step:DISK_LIMIT', `${step.error.message}\n${output}`);
    assert.ok(step.error.metadata.usedMb > DISK_MB, JSON.stringify(step.error.metadata));
    assert.equal(step.error.metadata.limitMb, DISK_MB);
    assert.ok(Date.now() - started < 15_000, 'killed at a check, long before its time limit');
    assert.equal((await runAttack('echo still working')).run.status, 'SUCCEEDED');
  });

  it('filling the disk through a file it deleted but holds open is killed and fails with DISK_LIMIT, where steps have cgroups', async (ctx) => {
    // The processes of a step, and so what they hold open, are known from its cgroup.
    const { run, step, output } = await runAttack(
      `grep -q plinth-steps /proc/self/cgroup || { echo NO-CGROUP; exit 0; }\nexec 3>/workspace/gone && rm /workspace/gone && head -c ${(DISK_MB + 32) * 1024 * 1024} /dev/urandom >&3 && echo filled && exec sleep 30`,
    );
    if (output.includes('NO-CGROUP')) return ctx.skip('steps have no cgroup on this host');
    assert.equal(run.status, 'FAILED', output);
    assert.equal(step.error.code, 'Engine:Step:DISK_LIMIT', `${step.error.message}\n${output}`);
    assert.ok(step.error.metadata.usedMb > DISK_MB, JSON.stringify(step.error.metadata));
  });

  it('leaves nothing behind in a tree nested deeper than a path may be long', async () => {
    const marker = `deep-${Date.now()}`;
    const name = 'd'.repeat(200);
    // Nested from the bottom up, by renames: no path the step itself uses is long.
    const { run, output } = await runAttack(
      `mkdir -p ${marker}/${name} && cd ${marker} && for i in $(seq 1 40); do mkdir w && mv ${name} w/ && mv w ${name} || exit 1; done && echo nested`,
    );
    assert.equal(run.status, 'SUCCEEDED', output);
    const left = () => execFileSync('find', [workRoot, '-name', marker], { encoding: 'utf8' }).trim();
    await waitFor('the deep tree to be removed', async () => (left() === '' ? true : undefined), 10_000);
  });

  it('making more files than PLINTH_STEP_DISK_FILES is killed and fails with DISK_LIMIT', async () => {
    const { run, step, output } = await runAttack(
      `mkdir many && cd many && seq 1 ${DISK_FILES + 500} | xargs touch && cd .. && chmod 000 many && echo made && exec sleep 30`,
    );
    // A measure may stop it before it says so: only the outcome counts.
    assert.equal(run.status, 'FAILED', output);
    assert.equal(step.error.code, 'Engine:Step:DISK_LIMIT', `${step.error.message}\n${output}`);
    assert.ok(step.error.metadata.files > DISK_FILES, JSON.stringify(step.error.metadata));
  });

  it('after every attack the worker and the API are healthy and no step process is left', async () => {
    const { run } = await runAttack('true');
    assert.equal(run.status, 'SUCCEEDED');
    assert.equal((await t.call('GET', '/health', { token: null })).status, 200);
    assert.equal(worker.exitCode, null);
    // A run is over once its step's shell exited; the sandbox's init may take a moment longer to go.
    await waitFor('every step process to be gone', async () => (sandboxProcesses(worker.pid!).length === 0 ? true : undefined), 5_000);
    worker.kill('SIGTERM');
    const [code] = await once(worker, 'exit');
    assert.equal(code, 0, 'the worker drains and exits cleanly');
  });
});
