import { AppError } from '../platform/errors.ts';
import { EgressDeniedError } from '../platform/outbound/address-policy.ts';
import { notAllowedError, OutboundLimitError, outboundRequest, type OutboundPolicy } from '../platform/outbound/http.ts';
import { basicAuthorization, type GitCredential } from './git-remote.ts';

export interface RemoteBranch {
  name: string;
  commitSha: string;
}

/** The most of a ref advertisement read: a repository with a hundred thousand branches fits. */
const MAX_ADVERTISEMENT_BYTES = 16 * 1024 * 1024;

/**
 * listRemoteBranches asks the repository's smart-HTTP endpoint for its refs (`GET
 * <url>/info/refs?service=git-upload-pack`, what `git ls-remote` sends) through the outbound policy, and
 * answers its branches sorted by name. No git process runs: the API host parses the answer itself, a
 * bounded pkt-line stream, and connects only where the policy allows.
 */
export async function listRemoteBranches(url: string, credential: GitCredential | null, timeoutMs: number, policy: OutboundPolicy): Promise<RemoteBranch[]> {
  // The path set on the URL, not resolved against it: a path of `//other.host/...` stays a path.
  const refs = new URL(url);
  refs.pathname = `${refs.pathname.replace(/\/+$/, '')}/info/refs`;
  refs.search = '?service=git-upload-pack';
  refs.hash = '';
  const headers: Record<string, string> = { 'user-agent': 'git/plinth', accept: 'application/x-git-upload-pack-advertisement', 'git-protocol': 'version=1' };
  if (credential) headers.authorization = basicAuthorization(credential);
  let res;
  try {
    res = await outboundRequest(refs, { headers, timeoutMs, maxBytes: MAX_ADVERTISEMENT_BYTES }, policy);
  } catch (error) {
    if (error instanceof EgressDeniedError) throw notAllowedError('Git:Repository:NOT_ALLOWED', "The code source's URL", error);
    if (error instanceof OutboundLimitError && error.limit === 'time') throw remoteError('TIMEOUT', timeoutMs);
    throw remoteError('UNREACHABLE', timeoutMs);
  }
  if (res.status === 401 || res.status === 403) throw remoteError('CREDENTIAL_REFUSED', timeoutMs);
  if (res.status === 404) throw remoteError('NOT_FOUND', timeoutMs);
  const advertisement = res.status === 200 ? parseAdvertisement(res.body) : undefined;
  if (!advertisement) throw remoteError(res.status === 200 ? 'NOT_FOUND' : 'UNREACHABLE', timeoutMs);
  return advertisement;
}

/** The reasons a remote fails, each its own code (docs/git.md#branches). */
type RemoteFailure = 'CREDENTIAL_REFUSED' | 'NOT_FOUND' | 'UNREACHABLE' | 'TIMEOUT';

/** remoteError is the ErrorBody of a failed remote: 422 for what the code source's owner must fix, 502/504 for the remote itself. */
function remoteError(failure: RemoteFailure, timeoutMs: number): AppError {
  switch (failure) {
    case 'CREDENTIAL_REFUSED':
      return new AppError(422, 'Git:Credential:REFUSED', "The Git server refused the code source's credential (or the repository needs one and none is set)");
    case 'NOT_FOUND':
      return new AppError(422, 'Git:Repository:NOT_FOUND', "The Git server has no repository at the code source's URL");
    case 'TIMEOUT':
      return new AppError(504, 'Git:Repository:TIMEOUT', `The Git server did not answer within ${timeoutMs} ms (PLINTH_GIT_TIMEOUT_MS)`);
    case 'UNREACHABLE':
      return new AppError(502, 'Git:Repository:UNREACHABLE', "The Git server at the code source's URL cannot be reached");
  }
}

/**
 * The branches of a smart-HTTP ref advertisement (protocol v0/v1): pkt-lines, `# service=...` then a
 * flush, an optional `version 1`, then `<sha> <ref>[\0capabilities]` lines up to a flush. Undefined when
 * the body is not one (a dumb-HTTP server, a login page).
 */
export function parseAdvertisement(body: Buffer): RemoteBranch[] | undefined {
  const lines: Array<string | null> = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const length = Number.parseInt(body.subarray(at, at + 4).toString('latin1'), 16);
    if (!Number.isInteger(length) || (length !== 0 && length < 4) || at + Math.max(length, 4) > body.length) return undefined;
    lines.push(
      length === 0
        ? null
        : body
            .subarray(at + 4, at + length)
            .toString('utf8')
            .replace(/\n$/, ''),
    );
    at += Math.max(length, 4);
  }
  if (!lines[0]?.startsWith('# service=git-upload-pack') || lines[1] !== null) return undefined;
  const branches: RemoteBranch[] = [];
  for (const line of lines.slice(2)) {
    if (line === null) break;
    const match = /^([0-9a-f]{40}|[0-9a-f]{64}) refs\/heads\/([^\0]+)/.exec(line);
    if (match) branches.push({ name: match[2]!, commitSha: match[1]! });
  }
  return branches.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
