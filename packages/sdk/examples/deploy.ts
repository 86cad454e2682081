import { createPlinth, PlinthApiError } from '@plinth/sdk';

// Usage: PLINTH_URL=http://127.0.0.1:8080 PLINTH_TOKEN=plk_… node --import tsx deploy.ts <stackId>
const plinth = createPlinth({ baseUrl: process.env.PLINTH_URL ?? 'http://127.0.0.1:8080', token: process.env.PLINTH_TOKEN });
const stackId = process.argv[2];

try {
  const run = await plinth.runs.start(stackId, { description: 'Deploy from the SDK example' });
  const logs = plinth.runs.followLogs(run.id, { onReconnect: () => console.error('reconnecting…') });
  for await (const line of logs) console.log(`[${line.step.stepId}] ${line.line}`);
  if ((await plinth.runs.get(run.id)).status === 'WAITING_FOR_APPROVAL') {
    console.log(`approved ${(await plinth.runs.approve(run.id)).stepName}`);
  }
  const done = await plinth.runs.wait(run.id, { timeoutMs: 30 * 60_000 });
  console.log(`run ${run.id}: ${done.status}`);
  process.exitCode = done.status === 'SUCCEEDED' ? 0 : 1;
} catch (error) {
  if (!(error instanceof PlinthApiError)) throw error;
  if (error.is('Api:Stack:NOT_FOUND')) console.error(`No stack ${stackId} in this organization`);
  else if (error.is('Auth:Permission:DENIED')) console.error('This API key may not run stacks');
  else console.error(`${error.code}: ${error.message} (request ${error.requestId})`);
  process.exitCode = 2;
}
