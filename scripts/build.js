// Compiles the `plinth` command to JavaScript with esbuild, so the command starts without compiling
// TypeScript. `npm run build` and npm's prepare run it; bin/plinth.js runs it before starting when a
// file the current build came from has changed since.
//
// Two bundles: cli.cjs (src/cli.ts and what it imports: the user commands, CommonJS, which Node loads
// without starting its ES module loader) and server-process.js with its chunks (src/server-process.ts
// and what it imports: the API and the worker, ES modules, as some of their packages are). cli.cjs
// imports the server only when a process command (serve, api-server, worker, migrate) runs.
//
// Plain JavaScript (not TypeScript like the other scripts): bin/plinth.js loads it without tsx.
//
// Layout: dist/builds/<hash of the output>/ holds one build (cli.cjs, the server's files, inputs.json);
// the symlink dist/current names the newest. A build is written to a temporary directory and renamed into
// place, then dist/current is swapped by renaming a new symlink over it: a process starting at any
// moment sees a complete build, and two processes building at once write the same directory (the same
// sources give the same hash) and both end on a complete one. A running process keeps importing from
// the build it started from (Node resolves the symlink once), so old builds are removed only after a day.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import state from './build-state.cjs';

export const { ROOT, freshBuild } = state;
const { DIST, CURRENT, MANIFEST } = state;
const BUILDS = path.join(DIST, 'builds');
const ENTRY = 'src/cli.ts';
/** What cli.ts imports for the process commands (serve, api, worker, migrate). */
const PROCESS_ENTRY = 'src/server-process.ts';
/** Files besides the bundled sources whose change changes the output. */
const BUILD_INPUTS = ['scripts/build.js', 'scripts/build-state.cjs', 'tsconfig.json'];
const KEEP_OLD_BUILDS_MS = 24 * 3600 * 1000;
/** File times come from the kernel's coarse clock, which can trail Date.now() by a few milliseconds. */
const CLOCK_SLACK_MS = 50;

/**
 * The bundle's chunks live in dist/builds/<hash>/, not beside their sources, so `import.meta.url` in a
 * source is given the URL of that source file: paths resolved from it (the migrations directory, the
 * package.json, the sandbox's helper scripts) are the same whether the source runs through tsx or bundled.
 */
const SOURCE_URL = '__plinthSourceUrl';
const ROOT_URL = '__plinthRootUrl';
// `require` is what esbuild's CommonJS wrapper calls for the Node built-ins of a bundled CommonJS package.
const SERVER_BANNER = [
  "import { createRequire as __plinthCreateRequire } from 'node:module';",
  'const require = __plinthCreateRequire(import.meta.url);',
  `const ${ROOT_URL} = new URL('../../../', import.meta.url);`,
].join(' ');
const CLI_BANNER = `const ${ROOT_URL} = new URL('../../../', require('node:url').pathToFileURL(__filename));`;
/**
 * The packages every user command loads at start are bundled: Node loads one file instead of about
 * twenty modules (commander alone is seven files).
 * Every other package stays in node_modules, loaded by Node as it is.
 */
const BUNDLED_PACKAGES = new Set(['commander', '@plinth/sdk', 'openapi-fetch']);

/** @type {import('esbuild').Plugin} */
const externalPackages = {
  name: 'plinth-external-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      const [scope, name] = args.path.split('/');
      return BUNDLED_PACKAGES.has(scope.startsWith('@') ? `${scope}/${name}` : scope) ? undefined : { path: args.path, external: true };
    });
  },
};

const LAZY_CHILD_PROCESS = path.join(ROOT, 'scripts', 'lazy-child-process.cjs');

/** @type {import('esbuild').Plugin} */
const cliApart = {
  name: 'plinth-cli-apart',
  setup(build) {
    // See scripts/lazy-child-process.cjs.
    build.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      args.importer.includes(`${path.sep}node_modules${path.sep}commander${path.sep}`) ? { path: LAZY_CHILD_PROCESS } : undefined,
    );
    // cli.cjs imports the server's bundle, built beside it, instead of holding a copy.
    build.onResolve({ filter: /^\.\/server-process\.ts$/ }, (args) =>
      args.importer === path.join(ROOT, ENTRY) ? { path: './server-process.js', external: true } : undefined,
    );
  },
};

/** @type {import('esbuild').Plugin} */
const sourceUrls = {
  name: 'plinth-source-urls',
  setup(build) {
    build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
      const text = await fs.promises.readFile(args.path, 'utf8');
      if (!text.includes('import.meta')) return undefined;
      const other = /import\.meta\.(?!url\b)\w+/.exec(text);
      if (other) return { errors: [{ text: `${other[0]} is not available in the build: use import.meta.url` }] };
      const relative = path.relative(ROOT, args.path).split(path.sep).join('/');
      // On the first line, so the line numbers of stack traces stay those of the source.
      const prelude = `const ${SOURCE_URL} = new URL(${JSON.stringify(relative)}, ${ROOT_URL}).href;`;
      return { contents: prelude + text, loader: path.extname(args.path).includes('t') ? 'ts' : 'js' };
    });
  },
};

/** build compiles src/cli.ts into a new build, makes it the current one and returns its directory. */
export async function build() {
  const [esbuild, { createHash }] = await Promise.all([import('esbuild'), import('node:crypto')]);
  const started = Date.now();
  fs.mkdirSync(BUILDS, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(DIST, 'tmp-'));
  // mkdtemp makes it private; the build is as readable as the sources.
  fs.chmodSync(tmp, 0o755);
  try {
    const common = {
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      target: 'node20',
      define: { 'import.meta.url': SOURCE_URL },
      sourcemap: 'linked',
      sourcesContent: false,
      metafile: true,
      logLevel: 'warning',
    };
    const [cli, server] = await Promise.all([
      esbuild.build({
        ...common,
        entryPoints: [ENTRY],
        outfile: path.join(tmp, 'cli.cjs'),
        format: 'cjs',
        // Without commander's long doc comments the file is a third smaller, and every command reads
        // and compiles all of it. Names stay, so a stack trace still names its functions; cli.cjs.map
        // maps it to the sources (NODE_OPTIONS=--enable-source-maps).
        minifyWhitespace: true,
        banner: { js: CLI_BANNER },
        plugins: [cliApart, externalPackages, sourceUrls],
      }),
      // Each dynamic import() of the server becomes a chunk of its own, loaded when it runs.
      esbuild.build({
        ...common,
        entryPoints: [PROCESS_ENTRY],
        outdir: tmp,
        format: 'esm',
        splitting: true,
        banner: { js: SERVER_BANNER },
        plugins: [externalPackages, sourceUrls],
      }),
    ]);
    const modified = (file) => {
      const { mtimeMs } = fs.statSync(path.join(ROOT, file));
      // A file written while esbuild ran may not be what it read: record it as changed.
      return mtimeMs >= started - CLOCK_SLACK_MS ? 0 : mtimeMs;
    };
    const manifest = { commands: {}, server: {} };
    for (const file of [...Object.keys(cli.metafile.inputs), ...BUILD_INPUTS].sort()) manifest.commands[file] = modified(file);
    for (const file of Object.keys(server.metafile.inputs).sort()) if (!(file in manifest.commands)) manifest.server[file] = modified(file);
    const dir = path.join(BUILDS, hashOf(tmp, createHash('sha256')));
    try {
      fs.renameSync(tmp, dir);
    } catch (error) {
      // The same build is in place already (another process built the same sources).
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    replaceFile(path.join(dir, MANIFEST), (file) => fs.writeFileSync(file, `${JSON.stringify(manifest, null, 1)}\n`));
    replaceFile(CURRENT, (file) => fs.symlinkSync(path.relative(DIST, dir), file));
    removeOldBuilds(dir);
    return dir;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** hashOf names a build by its content: the same sources give the same directory. */
function hashOf(dir, hash) {
  for (const name of fs.readdirSync(dir).sort())
    hash
      .update(name)
      .update('\0')
      .update(fs.readFileSync(path.join(dir, name)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** replaceFile writes a file beside `target` and renames it over `target`: readers see the old or the new one. */
function replaceFile(target, write) {
  const temporary = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  write(temporary);
  fs.renameSync(temporary, target);
}

/** removeOldBuilds deletes builds (and leftover temporary directories) older than a day, except `keep`. */
function removeOldBuilds(keep) {
  const cutoff = Date.now() - KEEP_OLD_BUILDS_MS;
  const builds = fs.readdirSync(BUILDS).map((name) => path.join(BUILDS, name));
  const temporary = fs
    .readdirSync(DIST)
    .filter((name) => name.startsWith('tmp-'))
    .map((name) => path.join(DIST, name));
  for (const dir of [...builds, ...temporary]) {
    // Another process may be removing the same directory.
    const stat = fs.statSync(dir, { throwIfNoEntry: false });
    if (dir !== keep && stat && stat.mtimeMs < cutoff) fs.rmSync(dir, { recursive: true, force: true });
  }
}

// `node scripts/build.js` builds; with --if-stale only when a source changed since the current build.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cli = (dir) => path.relative(ROOT, path.join(dir, 'cli.cjs'));
  const fresh = process.argv.includes('--if-stale') ? freshBuild() : undefined;
  if (fresh) console.log(`${cli(fresh)} is up to date`);
  else
    build().then(
      (dir) => console.log(`built ${cli(dir)}`),
      // esbuild has printed the errors.
      () => process.exit(1),
    );
}
