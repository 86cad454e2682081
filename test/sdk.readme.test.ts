import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
// Type-only, so nothing runs here: it makes `npm run typecheck` compile the example as a user would.
import type {} from '../packages/sdk/examples/deploy.ts';
import { createStack, startEngineTestApp, type EngineTestApp } from './helpers/engine.ts';
import { ROOT } from './helpers/plinth-process.ts';

const EXAMPLE = path.join(ROOT, 'packages/sdk/examples/deploy.ts');

/** The code block of the README that follows the marker naming the example. */
function readmeExample(): string {
  const readme = readFileSync(path.join(ROOT, 'packages/sdk/README.md'), 'utf8');
  const block = /<!-- examples\/deploy\.ts -->\n```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'the README has the example block after its marker');
  return block[1];
}

describe('the SDK README example', () => {
  let t: EngineTestApp;
  let baseUrl: string;
  before(async () => {
    t = await startEngineTestApp();
    await t.startWorker();
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => t.close());

  const runExample = (stackId: string) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', EXAMPLE, stackId], {
      cwd: ROOT,
      env: { ...process.env, PLINTH_URL: baseUrl, PLINTH_TOKEN: t.adminToken },
    }).then(
      (out) => ({ code: 0, ...out }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it('is the code of examples/deploy.ts, word for word', () => {
    assert.equal(readmeExample(), readFileSync(EXAMPLE, 'utf8'));
  });

  it('starts a run, prints its logs, approves it and reports the outcome', async () => {
    const stack = await createStack(t, [
      { id: 'plan', command: 'echo planning; echo 1 to add' },
      { id: 'gate', type: 'approval', needs: ['plan'] },
      { id: 'apply', command: 'echo applied', needs: ['gate'] },
    ]);
    const { code, stdout } = await runExample(stack.id);
    assert.equal(code, 0, stdout);
    const lines = stdout.trim().split('\n');
    assert.deepEqual(lines.slice(0, 3), ['[plan] planning', '[plan] 1 to add', 'approved gate']);
    assert.match(lines.at(-1) ?? '', /^run \S+: SUCCEEDED$/);
  });

  it('tells an unknown stack by its error code', async () => {
    const { code, stderr } = await runExample('no-such-stack');
    assert.equal(code, 2);
    assert.equal(stderr.trim(), 'No stack no-such-stack in this organization');
  });
});
