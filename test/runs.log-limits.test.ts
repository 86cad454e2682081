import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import {
  createStack,
  getRun,
  spawnWorkerProcess,
  startEngineTestApp,
  stepsOf,
  tempDir,
  triggerRun,
  waitFor,
  waitForRunStatus,
  type EngineTestApp,
} from './helpers/engine.ts';
import { startPlinthProcess, type PlinthProcess } from './helpers/plinth-process.ts';

const MB = 1024 * 1024;

/** The resident memory of a process, in bytes (Linux). */
function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** Samples a process's RSS every 20 ms while `work` runs; resolves with work's result and the highest sample. */
async function peakRssDuring<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rss(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rss(pid))), 20);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, rss(pid)) };
  } finally {
    clearInterval(timer);
  }
}

describe('step log limits, with a real worker process and a real API process', () => {
  let t: EngineTestApp;
  let worker: ReturnType<typeof spawnWorkerProcess>;
  let api: PlinthProcess | undefined;
  let bigStepId: string;

  before(async () => {
    t = await startEngineTestApp();
    worker = spawnWorkerProcess(t, { PLINTH_STEP_LOG_MAX_BYTES: '5000000' });
  });
  after(async () => {
    if (worker.exitCode === null) {
      worker.kill('SIGTERM');
      await once(worker, 'exit');
    }
    await api?.stop();
    await t.close();
  });

  it('a step printing 300 MB is truncated at the cap with a marker, the worker stays small, and the next step runs', async (ctx) => {
    const warm = await triggerRun(t, (await createStack(t, [{ id: 'warm', command: 'echo warm' }])).id);
    await waitForRunStatus(t, warm.id, 'SUCCEEDED', 30_000);
    const baseline = (await peakRssDuring(worker.pid!, () => sleep(300))).peak;

    const stack = await createStack(t, [
      { id: 'big', command: `yes "$(head -c 999 /dev/zero | tr '\\0' a)" | head -c 300000000` },
      { id: 'next', command: 'echo next', needs: ['big'] },
    ]);
    const { result: run, peak } = await peakRssDuring(worker.pid!, async () => {
      const triggered = await triggerRun(t, stack.id);
      return waitFor(
        `run ${triggered.id} to end`,
        async () => {
          const current = await getRun(t, triggered.id);
          return ['SUCCEEDED', 'FAILED'].includes(current.status) ? current : undefined;
        },
        120_000,
      );
    });
    assert.equal(run.status, 'SUCCEEDED', 'a truncated log does not fail the step');
    const growth = peak - baseline;
    ctx.diagnostic(`worker RSS ${Math.round(baseline / MB)} MB before, peak ${Math.round(peak / MB)} MB while its step printed 300 MB`);
    assert.ok(growth < 80 * MB, `the worker grew by ${Math.round(growth / MB)} MB while its step printed 300 MB`);

    const steps = await stepsOf(t, run.id);
    const bigStep = steps.find((s) => s.stepId === 'big');
    bigStepId = bigStep.id;
    assert.deepEqual(
      [bigStep.statusDetail.logTruncated, bigStep.statusDetail.logBytesSeen, bigStep.statusDetail.logBytesStored],
      [true, 300_000_000, 5_000_000],
    );
    const { rows } = await sql<{ n: string; bytes: string }>`
      select count(*) as n, sum(octet_length(line) + case when partial then 0 else 1 end) as bytes
        from step_logs where step_execution_id = ${bigStep.id} and stream = 'stdout'`.execute(t.db);
    assert.deepEqual([Number(rows[0].n), Number(rows[0].bytes)], [5000, 5_000_000], 'exactly the cap was stored');
    const last = await t.call('GET', `/pipeline-step-executions/${bigStep.id}/logs?after=5000`);
    assert.equal(last.body.data.length, 1);
    assert.equal(last.body.data[0].stream, 'system');
    assert.match(last.body.data[0].line, /output truncated at 5000000 bytes/);
    const nextStep = steps.find((s) => s.stepId === 'next');
    assert.equal(nextStep.status, 'SUCCEEDED');
    const nextLog = await t.call('GET', `/pipeline-step-executions/${nextStep.id}/logs`);
    assert.deepEqual(
      nextLog.body.data.map((l: any) => l.line),
      ['next'],
    );
  });

  it('16 followers that never read a 300 MB log cost the API a few MB each, and /health still answers at once', async (ctx) => {
    assert.ok(bigStepId, 'runs after the 300 MB step');
    // 75,000 more records of 4,000 bytes: a 300 MB log, made in the database in a second or two.
    await sql`
      insert into step_logs (step_execution_id, seq, stream, line)
      select ${bigStepId}, 5001 + g, 'stdout', repeat(md5(g::text), 125) from generate_series(1, 75000) as g`.execute(t.db);
    const page = await t.call('GET', `/pipeline-step-executions/${bigStepId}/logs?after=5001&limit=2000`);
    assert.ok(page.body.data.length < 300, `a JSON page stops near 1 MiB (${page.body.data.length} records of 4,000 bytes)`);
    assert.equal(page.body.meta.complete, false);

    api = await startPlinthProcess({ DATABASE_URL: t.database.url, PLINTH_ADMIN_TOKEN: t.adminToken, PLINTH_DATA_DIR: tempDir() }, { command: 'api-server' });
    const port = Number(new URL(api.baseUrl).port);
    const warmRead = await fetch(`${api.baseUrl}/pipeline-step-executions/${bigStepId}/logs?limit=2000`, {
      headers: { authorization: `Bearer ${t.adminToken}` },
    });
    assert.equal(warmRead.status, 200);
    await warmRead.arrayBuffer();
    const baseline = (await peakRssDuring(api.pid, () => sleep(500))).peak;

    const sockets: net.Socket[] = [];
    const { peak } = await peakRssDuring(api.pid, async () => {
      for (let i = 0; i < 16; i++) {
        const socket = net.connect(port, '127.0.0.1');
        socket.on('error', () => {});
        // The request goes out; the answer is never read (no 'data' listener: the socket stays paused).
        socket.write(`GET /pipeline-step-executions/${bigStepId}/logs?follow=true HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${t.adminToken}\r\n\r\n`);
        sockets.push(socket);
      }
      await waitFor('every stream to start', async () => (sockets.every((socket) => socket.bytesRead > 0) ? true : undefined), 30_000);
      // Long enough for every stream to fill its socket's kernel buffers and stall.
      await sleep(4_000);
    });
    try {
      const growth = peak - baseline;
      ctx.diagnostic(`API RSS ${Math.round(baseline / MB)} MB before, peak ${Math.round(peak / MB)} MB with 16 stalled followers`);
      assert.ok(growth < 16 * 4 * MB, `16 stalled followers grew the API by ${Math.round(growth / MB)} MB`);
      const started = performance.now();
      const health = await fetch(`${api.baseUrl}/health`);
      const healthMs = performance.now() - started;
      assert.equal(health.status, 200);
      ctx.diagnostic(`/health answered in ${Math.round(healthMs)} ms`);
      assert.ok(healthMs < 5_000, `/health answered in ${Math.round(healthMs)} ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    const after = await fetch(`${api.baseUrl}/health`);
    assert.equal(after.status, 200, 'the API is healthy once the followers are gone');
  });
});
