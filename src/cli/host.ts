// The API host of an invocation: how it is written, which origin a saved key belongs to, and whether
// talking to it crosses a network in clear text.

import { UsageError } from './exit-codes.ts';

export const DEFAULT_HOST = 'http://127.0.0.1:8080';

function parseHost(host: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(host) ? host : `http://${host}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`--host must be a URL such as ${DEFAULT_HOST}, not "${host}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--host must be an http or https URL, not "${host}"`);
  // Not echoed: the URL holds a password. Sent, it would go in clear beside the API key on every request.
  if (url.username || url.password) throw new UsageError('--host must not hold a user name or password: the API key is the credential (plinth login)');
  return url;
}

/** normaliseHost writes a host as the base URL requests go to (scheme added when missing, no trailing slash). */
export function normaliseHost(host: string): string {
  return parseHost(host).toString().replace(/\/+$/, '');
}

/**
 * hostOrigin is what a saved key is bound to: scheme, host and port (`https://plinth.example`,
 * `http://127.0.0.1:8080`). A path is left out: it does not change which server receives the key.
 */
export function hostOrigin(host: string): string {
  return parseHost(host).origin;
}

let warnedCleartext = false;

/**
 * warnIfCleartext writes one warning per invocation (on stderr, through `warn`) when `host` is plain
 * http on another machine: the key, and everything else, would cross the network readable by anyone on
 * the path. Loopback is spared: nothing leaves the machine.
 */
export async function warnIfCleartext(host: string, warn: (line: string) => void): Promise<void> {
  const url = parseHost(host);
  if (warnedCleartext || url.protocol !== 'http:') return;
  // Imported here, not at start: it loads node:net, which the commands that call no API never need
  // and which is a tenth of a short command's start.
  const { isLoopbackHost } = await import('../platform/loopback.ts');
  if (warnedCleartext || isLoopbackHost(url.hostname)) return;
  warnedCleartext = true;
  warn(`plinth: warning: ${url.origin} is plain http: the API key and every request cross the network unencrypted; use https://`);
}
