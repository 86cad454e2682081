#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=100
// Runs the compiled `plinth` (dist/, see scripts/build.js), first rebuilding it when a source file changed
// since it was built, so a checkout never runs stale code and needs no build step by hand.
//
// CommonJS (bin/package.json says so), as is the user commands' bundle it loads: a command then starts
// without Node's ES module loader.
//
// The V8 flags (the same in package.json's start script) bound the heap of a busy API process. By
// default V8 grows the young generation to 2 x 16 MB and lets the old one reach up to four times its
// live size (about 30 MB here) before collecting; in-flight requests promoted under load then sit
// there as garbage. With an 8 MB semi-space and a growth factor of 2, `npm run bench:api` measures
// about 150 MB RSS after the load instead of 165 to 215 MB, at no throughput cost it can measure.

const path = require('node:path');
const { freshBuild } = require('../scripts/build-state.cjs');

const server = ['serve', 'api-server', 'worker', 'migrate'].includes(process.argv[2]);
// The servers' stack traces name lines of the TypeScript sources; the user commands skip reading the maps.
if (server) process.setSourceMapsEnabled(true);

const dir = freshBuild({ server });
if (dir) require(path.join(dir, 'cli.cjs'));
else import('../scripts/build.js').then(({ build }) => build()).then((built) => require(path.join(built, 'cli.cjs')), cannotBuild);

function cannotBuild(error) {
  // A checkout that another user owns (a shared install after a git pull) cannot be rebuilt by this one.
  if (['EACCES', 'EPERM', 'EROFS'].includes(error?.code)) {
    process.stderr.write(
      `plinth: the build in dist/ is out of date and this user cannot rewrite it (${error.code}): run npm run build as the owner of the checkout\n`,
    );
    process.exit(1);
  }
  // esbuild has printed what is wrong in which source.
  if (!Array.isArray(error?.errors)) throw error;
  process.stderr.write('plinth: cannot build src/ (above)\n');
  process.exit(1);
}
