#!/usr/bin/env -S node --max-semi-space-size=8
// Runs the TypeScript sources through tsx, so `plinth` works from a checkout without a build step.
//
// --max-semi-space-size=8 (also in package.json's start script): V8 would grow the young generation to
// 2 x 16 MB under load; at 8 MB the API's RSS after `npm run bench:api` stays near 170 MB instead of
// 210 MB, for no measurable loss of throughput.
//
// The largest dependencies are loaded first, natively: once tsx's hooks are registered every module
// goes through them (on Node 20 in a separate loader thread), which roughly doubles the memory each
// module costs, and these few packages are a thousand ESM files between them. Loaded here, later
// imports of the same packages from the TypeScript sources are cache hits. About 25 MB less RSS.
await Promise.all(['@sinclair/typebox', 'kysely', 'fastify', 'pg', 'pino', 'ajv', 'ajv-formats', '@fastify/swagger'].map((name) => import(name)));

const { register } = await import('tsx/esm/api');
register();
await import('../src/cli.ts');
