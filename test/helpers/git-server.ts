import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real Git smart-HTTP server on loopback: `git http-backend` (the CGI that ships with git) behind a
 * small node HTTP server. Two repositories with several branches: `public.git` anyone may read, and
 * `private.git`, which answers 401 unless the request's Basic password is a token `acceptToken` accepts.
 */
export interface GitServer {
  url: string;
  /** The repository's URL: `public` or `private`. */
  repoUrl(name: 'public' | 'private'): string;
  /** Commits a file change to a branch of a repository, as `author`; returns the new commit's sha. */
  commit(name: 'public' | 'private', branch: string, file: string, content: string, author?: string): string;
  /** Commits what `change` does to a clone's work tree (symlinks, many files), on a branch made from main when missing; returns the commit's sha. */
  commitWith(name: 'public' | 'private', branch: string, change: (workTree: string) => void): string;
  head(name: 'public' | 'private', branch: string): string;
  /** Makes a branch at the head of another (main by default), without a commit of its own. */
  branch(name: 'public' | 'private', branch: string, from?: string): void;
  /** Requests served, as `METHOD path` with the Basic user name (never the password). */
  requests: string[];
  acceptToken: (token: string) => boolean;
  /** Delays every answer (for timeout tests). */
  delayMs: number;
  /** Holds every request from now on until the returned function is called: work in flight stays in flight. */
  hold(): () => void;
  close(): Promise<void>;
}

const BACKEND = '/usr/lib/git-core/git-http-backend';
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: os.tmpdir() };

function git(cwd: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync('git', args, { cwd, env: { ...GIT_ENV, ...env }, encoding: 'utf8' }).trim();
}

/** Makes a bare repository with a `stacks/app` directory on main, dev and feature/x. */
function makeRepo(root: string, name: string): void {
  const work = mkdtempSync(path.join(os.tmpdir(), 'plinth-git-work-'));
  git(work, ['init', '-q', '-b', 'main']);
  mkdirSync(path.join(work, 'stacks/app'), { recursive: true });
  writeFileSync(path.join(work, 'stacks/app/main.tf'), `# ${name} main\n`);
  writeFileSync(path.join(work, 'README.md'), `${name}\n`);
  const as = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };
  git(work, ['add', '.'], as);
  git(work, ['commit', '-q', '-m', 'first'], as);
  git(work, ['branch', 'dev']);
  git(work, ['branch', 'feature/x']);
  git(work, ['tag', 'v1']);
  git(root, ['clone', '-q', '--bare', work, `${name}.git`]);
  git(path.join(root, `${name}.git`), ['config', 'http.receivepack', 'false']);
  rmSync(work, { recursive: true, force: true });
}

export async function startGitServer(options: { tokens?: string[] } = {}): Promise<GitServer> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'plinth-git-server-'));
  makeRepo(root, 'public');
  makeRepo(root, 'private');
  const tokens = new Set(options.tokens ?? ['s3cret-token']);
  const state: Pick<GitServer, 'requests' | 'acceptToken' | 'delayMs'> = { requests: [], acceptToken: (t) => tokens.has(t), delayMs: 0 };

  let gate: Promise<void> | undefined;
  const hold = () => {
    let open!: () => void;
    gate = new Promise<void>((resolve) => (open = resolve));
    return () => {
      gate = undefined;
      open();
    };
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
    const [user, password] = auth ? Buffer.from(auth[1], 'base64').toString('utf8').split(/:(.*)/s) : [];
    state.requests.push(`${req.method} ${url.pathname} ${user ?? '-'}`);
    const serve = () => {
      if (url.pathname.startsWith('/private.git') && !(password && state.acceptToken(password))) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('Unauthorized');
        return;
      }
      const cgi = spawn(BACKEND, [], {
        env: {
          ...GIT_ENV,
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: url.pathname,
          REQUEST_METHOD: req.method ?? 'GET',
          QUERY_STRING: url.search.slice(1),
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
          GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
          REMOTE_USER: user ?? '',
          REMOTE_ADDR: '127.0.0.1',
        },
      });
      req.pipe(cgi.stdin);
      let head = Buffer.alloc(0);
      let headersDone = false;
      cgi.stdout.on('data', (chunk: Buffer) => {
        if (headersDone) return void res.write(chunk);
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        headersDone = true;
        let status = 200;
        for (const line of head.subarray(0, end).toString().split('\r\n')) {
          const [name, ...rest] = line.split(':');
          const value = rest.join(':').trim();
          if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
          else res.setHeader(name, value);
        }
        res.writeHead(status);
        res.write(head.subarray(end + 4));
      });
      cgi.on('close', () => res.end());
    };
    const go = () => (state.delayMs ? setTimeout(serve, state.delayMs) : serve());
    if (gate) void gate.then(go);
    else go();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const commitWith = (name: string, branch: string, change: (workTree: string) => void, author = 'Grace Hopper', message = 'change') => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'plinth-git-work-'));
    try {
      git(work, ['clone', '-q', path.join(root, `${name}.git`), '.']);
      git(work, ['checkout', '-q', '-B', branch, `origin/${git(work, ['branch', '-r', '--list', `origin/${branch}`]) ? branch : 'main'}`]);
      change(work);
      const as = { GIT_AUTHOR_NAME: author, GIT_AUTHOR_EMAIL: 'author@example.com', GIT_COMMITTER_NAME: author, GIT_COMMITTER_EMAIL: 'author@example.com' };
      git(work, ['add', '-A', '.'], as);
      git(work, ['commit', '-q', '-m', message], as);
      git(work, ['push', '-q', 'origin', branch]);
      return git(work, ['rev-parse', 'HEAD']);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  };
  const commit = (name: string, branch: string, file: string, content: string, author = 'Grace Hopper') =>
    commitWith(
      name,
      branch,
      (work) => {
        mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
        writeFileSync(path.join(work, file), content);
      },
      author,
      `change ${file}`,
    );

  return Object.assign(state, {
    url,
    repoUrl: (name: 'public' | 'private') => `${url}/${name}.git`,
    commit,
    commitWith,
    hold,
    head: (name: 'public' | 'private', branch: string) => git(path.join(root, `${name}.git`), ['rev-parse', `refs/heads/${branch}`]),
    branch: (name: 'public' | 'private', branch: string, from = 'main') => {
      git(path.join(root, `${name}.git`), ['branch', branch, from]);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  });
}
