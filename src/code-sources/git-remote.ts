import { spawn } from 'node:child_process';
import { AppError } from '../platform/errors.ts';

/** What authenticates a Git fetch over HTTP: sent as a Basic Authorization header, never in the URL. */
export interface GitCredential {
  username: string;
  password: string;
}

/** The PATH git runs with: fixed, nothing of the service's environment. */
const GIT_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * gitEnv is the whole environment of a git process: no system or global config, no prompt, only
 * http(s) transports (no file://, ssh or ext:: a tenant's URL could abuse), and the credential as an
 * `http.extraHeader` passed through GIT_CONFIG_COUNT, so it lives only in that process's environment:
 * never on a command line (visible in ps), in a URL, in a config file or in git's error messages.
 */
export function gitEnv(credential: GitCredential | null, extra: Record<string, string> = {}): Record<string, string> {
  const config: [string, string][] = [
    ['safe.directory', '*'],
    ['protocol.allow', 'never'],
    ['protocol.http.allow', 'always'],
    ['protocol.https.allow', 'always'],
    ['credential.helper', ''],
    ['http.followRedirects', 'false'],
  ];
  if (credential) {
    const basic = Buffer.from(`${credential.username}:${credential.password}`, 'utf8').toString('base64');
    config.push(['http.extraHeader', `Authorization: Basic ${basic}`]);
  }
  const env: Record<string, string> = {
    PATH: GIT_PATH,
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    GIT_ALLOW_PROTOCOL: 'http:https',
    GIT_CONFIG_COUNT: String(config.length),
    ...extra,
  };
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** The reasons a remote fails, each its own code (docs/git.md#errors). */
export type RemoteFailure = 'CREDENTIAL_REFUSED' | 'NOT_FOUND' | 'UNREACHABLE' | 'TIMEOUT';

/** classifyGitFailure reads git's stderr: which of the failures it was. */
export function classifyGitFailure(stderr: string): Exclude<RemoteFailure, 'TIMEOUT'> {
  if (/Authentication failed|could not read (Username|Password)|returned error: 40[13]|terminal prompts disabled/i.test(stderr)) return 'CREDENTIAL_REFUSED';
  if (/not found|returned error: 404|does not appear to be a git repository|not valid: is this a git repository/i.test(stderr)) return 'NOT_FOUND';
  return 'UNREACHABLE';
}

/** remoteError is the ErrorBody of a failed remote: 422 for what the code source's owner must fix, 502/504 for the remote itself. */
export function remoteError(failure: RemoteFailure, timeoutMs: number): AppError {
  switch (failure) {
    case 'CREDENTIAL_REFUSED':
      return new AppError(422, 'Git:Credential:REFUSED', 'The Git server refused the code source\'s credential (or the repository needs one and none is set)');
    case 'NOT_FOUND':
      return new AppError(422, 'Git:Repository:NOT_FOUND', 'The Git server has no repository at the code source\'s URL');
    case 'TIMEOUT':
      return new AppError(504, 'Git:Repository:TIMEOUT', `The Git server did not answer within ${timeoutMs} ms (PLINTH_GIT_TIMEOUT_MS)`);
    case 'UNREACHABLE':
      return new AppError(502, 'Git:Repository:UNREACHABLE', 'The Git server at the code source\'s URL cannot be reached');
  }
}

export interface RemoteBranch {
  name: string;
  commitSha: string;
}

/**
 * listRemoteBranches runs `git ls-remote --heads` against the repository over the smart-HTTP protocol,
 * killed after `timeoutMs`. The branches come back sorted by name; a failure is a typed error.
 */
export function listRemoteBranches(url: string, credential: GitCredential | null, timeoutMs: number): Promise<RemoteBranch[]> {
  return new Promise((resolve, reject) => {
    // Its own process group: git hands HTTP to a git-remote-http child, which must die with it.
    const child = spawn('git', ['ls-remote', '--heads', '--', url], { env: gitEnv(credential), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const killAll = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killAll();
    }, timeoutMs);
    const out: Buffer[] = [];
    let stderr = '';
    let outBytes = 0;
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      // A hostile server cannot make the service hold an unbounded answer.
      if (outBytes > 16 * 1024 * 1024) killAll();
      else out.push(d);
    });
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4096)));
    child.on('error', () => reject(remoteError('UNREACHABLE', timeoutMs)));
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) return reject(remoteError('TIMEOUT', timeoutMs));
      if (code !== 0) return reject(remoteError(classifyGitFailure(stderr), timeoutMs));
      resolve(parseBranches(Buffer.concat(out).toString('utf8')));
    });
  });
}

/** parseBranches reads `<sha>\trefs/heads/<name>` lines. */
export function parseBranches(text: string): RemoteBranch[] {
  const branches: RemoteBranch[] = [];
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{40,64})\trefs\/heads\/(.+)$/.exec(line);
    if (match) branches.push({ name: match[2], commitSha: match[1] });
  }
  return branches.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
