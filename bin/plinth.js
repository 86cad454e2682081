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

const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');
const { freshBuild } = require('../scripts/build-state.cjs');

// Any word of the command line, not just the first: global options may come before the command. A
// user command with such a word as an argument (a stack named "worker") only starts a little slower.
const server = process.argv.slice(2).some((word) => ['serve', 'api-server', 'worker', 'migrate'].includes(word));
// The servers' stack traces name lines of the TypeScript sources; the user commands skip reading the maps.
if (server) process.setSourceMapsEnabled(true);

const dir = freshBuild({ server });
if (dir) runCli(dir);
else import('../scripts/build.js').then(({ build }) => build()).then(runCli, cannotBuild);

function runCli(buildDir) {
  const file = path.join(buildDir, 'cli.cjs');
  // The process commands import() the server's bundle, and on Node 20 a script run by node:vm has no
  // import() (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING; its main-context loader option fails once the
  // script comes from a cache); a server's start-up is not worth the cache. The user commands load
  // what they load late with require (a test holds the bundle to that).
  if (server) require(file);
  else runCached(file, buildDir);
}

/**
 * runCached runs cli.cjs as require would, but with V8's code cache for it, kept beside it in
 * cli.cjs.cache: compiling the bundle anew is a quarter of what a short command adds to Node's own
 * start (npm run bench:cli). A run that found no cache, or one V8 turned down (another Node version),
 * writes one when it exits, with all it compiled; a user who cannot write the build runs without it.
 * V8 checks a cache against its script's length only, not its content: that holds here because a
 * build's directory is named by the hash of its files, so its cli.cjs never changes.
 */
function runCached(file, buildDir) {
  const cacheFile = `${file}.cache`;
  let cachedData;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {}
  const script = new vm.Script(Module.wrap(fs.readFileSync(file, 'utf8')), {
    filename: file,
    cachedData,
  });
  if ((!cachedData || script.cachedDataRejected) && writable(buildDir)) process.once('exit', () => writeCodeCache(cacheFile, script));
  const cli = new Module(file, module);
  cli.filename = file;
  cli.paths = Module._nodeModulePaths(buildDir);
  script.runInThisContext().call(cli.exports, cli.exports, Module.createRequire(file), cli, file, buildDir);
}

function writable(dir) {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function writeCodeCache(cacheFile, script) {
  // Written aside and renamed, so a command starting meanwhile reads a whole cache or none.
  const aside = `${cacheFile}.${process.pid}`;
  try {
    fs.writeFileSync(aside, script.createCachedData());
    fs.renameSync(aside, cacheFile);
  } catch {
    fs.rmSync(aside, { force: true });
  }
}

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
