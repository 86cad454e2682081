import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { LogSink } from '../src/engine/log-sink.ts';
import { HIGH_WATER_BYTES } from '../src/engine/runners/output-capture.ts';
import { runScript } from '../src/engine/runners/script.ts';
import { createStack, getRun, startEngineTestApp, triggerRun, waitFor, waitForStep, type EngineTestApp } from './helpers/engine.ts';
import { createSandbox } from '../src/engine/sandbox/index.ts';
import { loadSandboxSettings } from '../src/engine/sandbox/settings.ts';

// These tests drive the output capture directly; isolation is the sandbox suites' concern.
const CAPTURE_SANDBOX = createSandbox(loadSandboxSettings({ PLINTH_SANDBOX: 'off' }, undefined));

/** Every record of a step, all pages. */
async function allRecords(t: EngineTestApp, executionId: string): Promise<any[]> {
  const records: any[] = [];
  for (let after = 0; ; ) {
    const page = await t.call('GET', `/pipeline-step-executions/${executionId}/logs?after=${after}&limit=2000`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    records.push(...page.body.data);
    after = page.body.meta.lastSeq;
    if (page.body.meta.complete) return records;
  }
}

/** The exact bytes a stream printed, rebuilt from its records as the API documents it. */
function streamBytes(records: any[], stream: string): Buffer {
  return Buffer.concat(
    records
      .filter((r) => r.stream === stream)
      .flatMap((r) => [r.bytes === undefined ? Buffer.from(r.line, 'utf8') : Buffer.from(r.bytes, 'base64'), Buffer.from(r.partial ? '' : '\n')]),
  );
}

async function runOneStep(t: EngineTestApp, command: string) {
  const stack = await createStack(t, [{ id: 'out', command }]);
  const run = await triggerRun(t, stack.id);
  const ended = await waitFor(`run ${run.id} to end`, async () => {
    const current = await getRun(t, run.id);
    return ['SUCCEEDED', 'FAILED'].includes(current.status) ? current : undefined;
  });
  const step = await waitForStep(t, run.id, 'out', ended.status);
  return { run: ended, step };
}

/** runScript in a fresh workspace of CAPTURE_SANDBOX, disposed of afterwards (what runStep does). */
async function runInFreshWorkspace(o: Omit<Parameters<typeof runScript>[0], 'workspace'>) {
  const workspace = await CAPTURE_SANDBOX.open();
  try {
    return await runScript({ ...o, workspace });
  } finally {
    await workspace.dispose();
  }
}

describe('step output stored byte for byte', () => {
  let t: EngineTestApp;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
  });
  after(() => t.close());

  it('NUL bytes and invalid UTF-8 are stored exactly, shown escaped, and the step still succeeds', async () => {
    // printf's octal escapes: \000 is NUL, \377 and \303 are not valid UTF-8 where they stand.
    const { run, step } = await runOneStep(
      t,
      "printf 'before\\n'; printf 'a\\000b\\n'; printf 'c\\377d\\\\e\\n' >&2; printf 'caf\\303\\251 \\303\\n'; head -c 40000 /dev/zero | tr '\\0' x; echo; printf 'no newline'",
    );
    assert.equal(run.status, 'SUCCEEDED');
    const records = await allRecords(t, step.id);
    const stdout = streamBytes(records, 'stdout');
    const expected = Buffer.concat([
      Buffer.from('before\na\x00b\n', 'latin1'),
      Buffer.from('café ', 'utf8'),
      Buffer.from([0xc3, 0x0a]),
      Buffer.alloc(40_000, 'x'),
      Buffer.from('\nno newline'),
    ]);
    assert.deepEqual(stdout, expected, 'stdout rebuilt from the records is byte for byte what the step printed');
    assert.deepEqual(streamBytes(records, 'stderr'), Buffer.from([0x63, 0xff, 0x64, 0x5c, 0x65, 0x0a]));

    const byLine = (line: string) => records.find((r) => r.line === line);
    assert.equal(byLine('before').bytes, undefined, 'plain text carries no bytes');
    assert.equal(byLine('a\\x00b').bytes, Buffer.from('a\x00b', 'latin1').toString('base64'));
    assert.equal(byLine('c\\xffd\\\\e').stream, 'stderr');
    assert.ok(byLine('café \\xc3'), 'valid characters stay readable beside an escaped byte');
    const long = records.filter((r) => r.line.startsWith('xxx'));
    assert.deepEqual(
      long.map((r) => [r.line.length, r.partial ?? false]),
      [
        [16_384, true],
        [16_384, true],
        [7_232, false],
      ],
      'a 40,000-byte line is split, not cut',
    );
    // stdout and stderr are two pipes: only the order within a stream is defined.
    const lastOut = records.filter((r) => r.stream === 'stdout').at(-1);
    assert.deepEqual([lastOut.line, lastOut.partial], ['no newline', true]);
    assert.equal(step.statusDetail.logTruncated, undefined);
  });

  it("a step's last lines are written by the transaction that commits its outcome: no statement or commit of their own", async () => {
    await sql
      .raw(`
      create table log_txids (txid bigint);
      create function log_txid() returns trigger language plpgsql as $$ begin insert into log_txids values (txid_current() % 4294967296); return null; end $$;
      create trigger log_txid after insert on step_logs for each statement execute function log_txid();`)
      .execute(t.db);
    try {
      const { run, step } = await runOneStep(t, 'echo first; echo last');
      assert.equal(run.status, 'SUCCEEDED');
      assert.deepEqual(
        (await allRecords(t, step.id)).map((r) => r.line),
        ['first', 'last'],
      );
      const { rows } = await sql<{ logs: string; outcome: string }>`
        select (select string_agg(distinct txid::text, ',') from log_txids) as logs,
               (select xmin::text from run_transitions where step_execution_id = ${step.id} and to_status = 'SUCCEEDED') as outcome`.execute(t.db);
      assert.equal(rows[0].logs, rows[0].outcome, 'one transaction wrote the lines and the outcome');
    } finally {
      await sql.raw('drop trigger log_txid on step_logs; drop function log_txid; drop table log_txids').execute(t.db);
    }
  });

  it('a log flush that hits a deadlock is retried and every line is stored', async () => {
    await sql
      .raw(`
      create sequence log_fault_once;
      create function log_fault() returns trigger language plpgsql as $$
      begin
        if nextval('log_fault_once') = 1 then raise exception 'injected deadlock' using errcode = '40P01'; end if;
        return null;
      end $$;
      create trigger log_fault before insert on step_logs for each statement execute function log_fault();`)
      .execute(t.db);
    try {
      const { run, step } = await runOneStep(t, 'for i in $(seq 1 300); do echo "line $i"; done');
      assert.equal(run.status, 'SUCCEEDED');
      const records = await allRecords(t, step.id);
      assert.deepEqual(
        records.map((r) => r.line),
        Array.from({ length: 300 }, (_, i) => `line ${i + 1}`),
      );
      const { rows } = await sql<{ n: string }>`select last_value as n from log_fault_once`.execute(t.db);
      assert.ok(Number(rows[0].n) >= 2, 'the injected fault fired and the flush was tried again');
    } finally {
      await sql.raw('drop trigger log_fault on step_logs; drop function log_fault; drop sequence log_fault_once').execute(t.db);
    }
  });

  it('a flush that fails for good fails the step with Engine:Log:STORE_FAILED instead of losing lines silently', async () => {
    await sql
      .raw(`
      create function log_broken() returns trigger language plpgsql as $$
      begin raise exception 'injected failure' using errcode = 'P0001'; end $$;
      create trigger log_broken before insert on step_logs for each statement execute function log_broken();`)
      .execute(t.db);
    let result;
    try {
      result = await runOneStep(t, 'echo one; echo two');
    } finally {
      await sql.raw('drop trigger log_broken on step_logs; drop function log_broken').execute(t.db);
    }
    assert.equal(result.run.status, 'FAILED');
    assert.equal(result.step.error.code, 'Engine:Log:STORE_FAILED');
    assert.doesNotMatch(result.step.error.message, /injected failure/, "the database's error is the worker log's, not the step readers'");
    assert.equal(result.step.statusDetail.logLinesLost, 2);
  });

  it('reading the process pauses it while the database is behind: a 10 MB printer never has more than a few MB queued', async () => {
    const { step } = await runOneStep(t, 'true');
    await sql
      .raw(`
      create function log_slow() returns trigger language plpgsql as $$ begin perform pg_sleep(0.05); return null; end $$;
      create trigger log_slow before insert on step_logs for each statement execute function log_slow();`)
      .execute(t.db);
    class WatchedSink extends LogSink {
      peakQueued = 0;
      override writeOutput(stream: 'stdout' | 'stderr', bytes: Buffer, partial: boolean): boolean {
        const accepted = super.writeOutput(stream, bytes, partial);
        this.peakQueued = Math.max(this.peakQueued, this.queuedBytes);
        return accepted;
      }
    }
    const sink = new WatchedSink(t.db, step.id, 1);
    try {
      const result = await runInFreshWorkspace({
        command: `yes "$(head -c 999 /dev/zero | tr '\\0' a)" | head -c 10000000`,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        stopGrace: { graceMs: 1000, termGraceMs: 1000 },
        sink,
        signal: new AbortController().signal,
      });
      await sink.close();
      assert.equal(result.exitCode, 0);
    } finally {
      await sql.raw('drop trigger log_slow on step_logs; drop function log_slow').execute(t.db);
    }
    assert.ok(sink.peakQueued <= HIGH_WATER_BYTES + 512 * 1024, `at most ${sink.peakQueued} bytes were queued`);
    const { rows } = await sql<{ n: string; bytes: string }>`
      select count(*) as n, sum(octet_length(line) + 1) as bytes from step_logs where step_execution_id = ${step.id}`.execute(t.db);
    assert.deepEqual([Number(rows[0].n), Number(rows[0].bytes)], [10_000, 10_000_000], 'every line of the 10 MB was stored');
    assert.equal(sink.stats.truncated, false);
  });

  it('the byte and line limits store up to the limit, then one marker line, and count the rest', async () => {
    const { step } = await runOneStep(t, 'true');
    const run = (command: string, limits: { maxBytes: number; maxLines: number }, from: number) => {
      const sink = new LogSink(t.db, step.id, from, { limits });
      return runInFreshWorkspace({
        command,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        stopGrace: { graceMs: 1000, termGraceMs: 1000 },
        sink,
        signal: new AbortController().signal,
      })
        .then(() => sink.close())
        .then(() => sink.stats);
    };
    const byBytes = await run('echo 12345; echo 67890; echo abcde', { maxBytes: 9, maxLines: 100 }, 1);
    assert.deepEqual(byBytes, { bytesSeen: 18, bytesStored: 9, linesStored: 2, truncated: true, linesLost: 0 });
    const byLines = await run('seq 1 10', { maxBytes: 1000, maxLines: 3 }, 100);
    assert.deepEqual([byLines.linesStored, byLines.bytesStored, byLines.bytesSeen, byLines.truncated], [3, 6, 21, true]);
    const records = await allRecords(t, step.id);
    assert.deepEqual(
      records.map((r) => [r.seq, r.stream, r.line.replace(/ \(.*/, ''), r.partial ?? false]),
      [
        [1, 'stdout', '12345', false],
        [2, 'stdout', '678', true],
        [3, 'system', '[plinth] output truncated at 9 bytes', false],
        [100, 'stdout', '1', false],
        [101, 'stdout', '2', false],
        [102, 'stdout', '3', false],
        [103, 'system', '[plinth] output truncated at 3 lines', false],
      ],
    );
  });

  it('one caller follows at most 32 log streams at once: the 33rd is a 429 ErrorBody until one ends', async () => {
    const baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const stack = await createStack(t, [{ id: 'slow', command: 'echo started; sleep 30' }]);
    const run = await triggerRun(t, stack.id);
    const step = await waitForStep(t, run.id, 'slow', 'RUNNING');
    const url = `${baseUrl}/pipeline-step-executions/${step.id}/logs?follow=true`;
    const headers = { authorization: `Bearer ${t.adminToken}` };
    const controllers = Array.from({ length: 32 }, () => new AbortController());
    try {
      const streams = await Promise.all(controllers.map((c) => fetch(url, { headers, signal: c.signal })));
      assert.deepEqual([...new Set(streams.map((r) => r.status))], [200]);
      const refused = await fetch(url, { headers });
      assert.equal(refused.status, 429);
      assert.equal((await refused.json()).code, 'Api:StepLogs:TOO_MANY_FOLLOWERS');
      controllers[0].abort();
      const late = new AbortController();
      controllers.push(late);
      const again = await waitFor('a slot to be given back', async () => {
        const res = await fetch(url, { headers, signal: late.signal });
        if (res.status === 200) return res;
        await res.body?.cancel();
        return undefined;
      });
      assert.equal(again.status, 200);
    } finally {
      for (const c of controllers) c.abort();
      await t.call('POST', `/pipeline-runs/${run.id}/cancel`);
    }
  });

  it('Last-Event-ID and after must be seqs: anything else is a 400 ErrorBody, never a 500', async () => {
    const { step } = await runOneStep(t, 'echo a; echo b');
    for (const header of ['abc', '-1', '1e3', '2147483648', '99999999999999999999', '1.5']) {
      const res = await t.call('GET', `/pipeline-step-executions/${step.id}/logs?follow=true`, { headers: { 'last-event-id': header } });
      assert.equal(res.status, 400, `Last-Event-ID ${header}`);
      assert.equal(res.body.code, 'Api:Request:INVALID');
    }
    const tooFar = await t.call('GET', `/pipeline-step-executions/${step.id}/logs?after=2147483648`);
    assert.equal(tooFar.status, 400);
    assert.equal(tooFar.body.code, 'Api:Request:INVALID');
    const resumed = await t.call('GET', `/pipeline-step-executions/${step.id}/logs`, { headers: { 'last-event-id': '1' } });
    assert.deepEqual(
      resumed.body.data.map((l: any) => l.line),
      ['b'],
    );
  });
});
