#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=100
// Runs the TypeScript sources through tsx, so `plinth` works from a checkout without a build step.
//
// The V8 flags (the same in package.json's start script) bound the heap of a busy API process. By
// default V8 grows the young generation to 2 x 16 MB and lets the old one reach up to four times its
// live size (about 30 MB here) before collecting; in-flight requests promoted under load then sit
// there as garbage. With an 8 MB semi-space and a growth factor of 2, `npm run bench:api` measures
// about 150 MB RSS after the load instead of 165 to 215 MB, at no throughput cost it can measure.
//
// The largest dependencies are loaded first, natively: once tsx's hooks are registered every module
// goes through them (on Node 20 in a separate loader thread), which roughly doubles the memory each
// module costs, and these few packages are a thousand ESM files between them. Loaded here, later
// imports of the same packages from the TypeScript sources are cache hits. About 25 MB less RSS.
// The user commands (login, run, ...) load none of them: they start without paying for the server.
const PROCESS_COMMANDS = ['serve', 'api-server', 'worker', 'migrate'];
if (PROCESS_COMMANDS.includes(process.argv[2]))
  await Promise.all(['@sinclair/typebox', 'kysely', 'fastify', 'pg', 'pino', 'ajv', 'ajv-formats', '@fastify/swagger'].map((name) => import(name)));

const { register } = await import('tsx/esm/api');
register();
await import('../src/cli.ts');
