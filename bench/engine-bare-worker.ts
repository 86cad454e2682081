/**
 * The baseline of bench:engine: a bare graphile-worker job doing the same `sh -c` as a bench step,
 * on the same database, with the concurrency and poll interval of a Plinth worker. Prints "ready".
 */
import { spawn } from 'node:child_process';
import { run } from 'graphile-worker';

const command = process.env.BENCH_COMMAND!;
const runner = await run({
  connectionString: process.env.DATABASE_URL!,
  concurrency: 16,
  pollInterval: 2_000,
  noHandleSignals: true,
  taskList: {
    'bench.bare': async (payload) => {
      const { id } = payload as { id: string };
      await new Promise((resolve) => {
        const child = spawn('sh', ['-c', command], { env: { PATH: process.env.PATH, PLINTH_STEP_EXECUTION_ID: id }, stdio: 'ignore' });
        child.on('exit', resolve);
      });
    },
  },
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void runner.stop().then(() => process.exit(0)));
