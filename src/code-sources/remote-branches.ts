import { setImmediate } from 'node:timers/promises';
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
  const advertisement = res.status === 200 ? await parseAdvertisement(res.body) : undefined;
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

/** What follows a branch's commit id on its line. */
const BRANCH_REF = Buffer.from(' refs/heads/');
/** The shortest packet that can name a branch: its length, a SHA-1, the ref's prefix, one character. */
const SHORTEST_BRANCH_PACKET = 4 + 40 + BRANCH_REF.length + 1;
/** Packets read (or branches sorted) between two turns of the event loop. */
const PACKETS_PER_TURN = 2048;

/**
 * The branches of a smart-HTTP ref advertisement (protocol v0/v1): pkt-lines, `# service=...` then a
 * flush, an optional `version 1`, then `<sha> <ref>[\0capabilities]` lines up to a flush. Undefined when
 * the body is not one (a dumb-HTTP server, a login page).
 *
 * The answer is the remote's, and the remote may be hostile. It is read on the API's event loop, so a
 * packet is decoded only once its bytes say it names a branch, nothing is read past the refs' flush,
 * and the loop (and the sort, should the server not send its refs in order) lets other work run every
 * PACKETS_PER_TURN packets: 16 MiB of tiny packets, or of branches, never holds the process for more
 * than a few milliseconds at a time.
 */
export async function parseAdvertisement(body: Buffer): Promise<RemoteBranch[] | undefined> {
  const service = packetLength(body, 0);
  if (!service || !body.toString('latin1', 4, service).startsWith('# service=git-upload-pack') || packetLength(body, service) !== 0) return undefined;
  const branches: RemoteBranch[] = [];
  let sorted = true;
  for (let at = service + 4, packets = 1; at < body.length; packets++) {
    if (packets % PACKETS_PER_TURN === 0) await setImmediate();
    const length = packetLength(body, at);
    if (length === undefined) return undefined;
    if (length === 0) break;
    const branch = length >= SHORTEST_BRANCH_PACKET ? branchOf(body, at, length) : undefined;
    if (branch) {
      sorted &&= branches.length === 0 || branches[branches.length - 1]!.name < branch.name;
      branches.push(branch);
    }
    at += length;
  }
  // Git advertises its refs in name order; a server that does not is sorted here, a turn at a time.
  return sorted ? branches : sortByName(branches);
}

const byName = (a: RemoteBranch, b: RemoteBranch) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** A merge sort that lets other work run between its steps: 300,000 names in one sort held the loop for over a second. */
async function sortByName(branches: RemoteBranch[]): Promise<RemoteBranch[]> {
  let runs: RemoteBranch[][] = [];
  for (let at = 0; at < branches.length; at += PACKETS_PER_TURN) {
    runs.push(branches.slice(at, at + PACKETS_PER_TURN).sort(byName));
    await setImmediate();
  }
  while (runs.length > 1) {
    const merged: RemoteBranch[][] = [];
    for (let i = 0; i < runs.length; i += 2) merged.push(i + 1 < runs.length ? await merge(runs[i]!, runs[i + 1]!) : runs[i]!);
    runs = merged;
  }
  return runs[0] ?? [];
}

async function merge(a: RemoteBranch[], b: RemoteBranch[]): Promise<RemoteBranch[]> {
  const out: RemoteBranch[] = [];
  for (let i = 0, j = 0; i < a.length || j < b.length; ) {
    if (out.length % PACKETS_PER_TURN === PACKETS_PER_TURN - 1) await setImmediate();
    out.push(j >= b.length || (i < a.length && byName(a[i]!, b[j]!) <= 0) ? a[i++]! : b[j++]!);
  }
  return out;
}

/** The branch the packet at `at` names, if it names one (after a SHA-1 or a SHA-256 id). */
function branchOf(body: Buffer, at: number, length: number): RemoteBranch | undefined {
  for (const sha of [40, 64]) {
    const ref = at + 4 + sha;
    if (length > 4 + sha + BRANCH_REF.length && body.compare(BRANCH_REF, 0, BRANCH_REF.length, ref, ref + BRANCH_REF.length) === 0) {
      const match = /^([0-9a-f]{40}|[0-9a-f]{64}) refs\/heads\/([^\0\n]+)/.exec(body.toString('utf8', at + 4, at + length));
      return match ? { name: match[2]!, commitSha: match[1]! } : undefined;
    }
  }
  return undefined;
}

/** The length of the pkt-line at `at` (0: a flush), or undefined when there is none there or it lies about its length. */
function packetLength(body: Buffer, at: number): number | undefined {
  if (at + 4 > body.length) return undefined;
  let length = 0;
  for (let i = at; i < at + 4; i++) {
    const digit = hexDigit(body[i]!);
    if (digit === undefined) return undefined;
    length = length * 16 + digit;
  }
  if ((length !== 0 && length < 4) || at + Math.max(length, 4) > body.length) return undefined;
  return length;
}

function hexDigit(byte: number): number | undefined {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  return undefined;
}
