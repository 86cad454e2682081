// Where the build of `plinth` lives and whether it is up to date: what bin/plinth.js needs before every
// command, apart from scripts/build.js (which builds, and loads esbuild to do it).
//
// CommonJS, like bin/plinth.js and the user commands' bundle: Node loads a CommonJS program without
// starting its ES module loader, which costs a command some 30 ms of its start (npm run bench:cli).

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
const CURRENT = path.join(DIST, 'current');
const MANIFEST = 'inputs.json';

/**
 * freshBuild returns the directory of the current build when every file it was built from still has
 * the modification time it had then, or undefined when there is no build or a source changed. Without
 * `server`, only the files of what the user commands load are checked (some fifty of them, not three
 * hundred: each check is a system call, and `plinth version` would spend more on them than on
 * starting); a stale server does not matter to a command that never loads it, and the next process
 * command rebuilds it.
 */
function freshBuild({ server = true } = {}) {
  let dir;
  let manifest;
  try {
    dir = path.resolve(DIST, fs.readlinkSync(CURRENT));
    manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), 'utf8'));
  } catch {
    return undefined;
  }
  for (const inputs of server ? [manifest.commands, manifest.server] : [manifest.commands]) {
    for (const file in inputs) if (fs.statSync(path.join(ROOT, file), { throwIfNoEntry: false })?.mtimeMs !== inputs[file]) return undefined;
  }
  return dir;
}

module.exports = { ROOT, DIST, CURRENT, MANIFEST, freshBuild };
