/** What authenticates a Git fetch over HTTP: sent as a Basic Authorization header, never in the URL. */
export interface GitCredential {
  username: string;
  password: string;
}

/** The Authorization header value of a credential. */
export function basicAuthorization(credential: GitCredential): string {
  return `Basic ${Buffer.from(`${credential.username}:${credential.password}`, 'utf8').toString('base64')}`;
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
  if (credential) config.push(['http.extraHeader', `Authorization: ${basicAuthorization(credential)}`]);
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
