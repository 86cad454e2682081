import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AppError, type ErrorCode } from '../errors.ts';
import { EgressDeniedError, isLoopback, namedExactly, type AllowList } from './address-policy.ts';
import { resolveAllowed, systemLookup, withTimeout, type Lookup } from './resolve.ts';

/**
 * Every HTTP request Plinth makes on a tenant's behalf (a repository's branches, an OAuth token or user
 * endpoint, the Git app's API, an audit webhook) goes through outboundRequest: the URL's host is resolved
 * once, every address it resolves to is checked against the outbound policy (address-policy.ts), and
 * the connection goes to the address that was checked (TLS still verifies the certificate for the
 * name). No redirect is followed: a 3xx is the answer. The answer is bounded in time and in size.
 */
export interface OutboundPolicy {
  allow: AllowList;
  lookup?: Lookup;
}

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** The most of the answer's body kept; past it the request fails. */
  maxBytes: number;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** The answer took longer than the caller's time (`time`), or was larger than its bound (`size`). */
export class OutboundLimitError extends Error {
  constructor(
    readonly limit: 'time' | 'size',
    message: string,
  ) {
    super(message);
  }
}

export async function outboundRequest(url: string | URL, request: OutboundRequest, policy: OutboundPolicy): Promise<OutboundResponse> {
  const target = typeof url === 'string' ? new URL(url) : url;
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`${target.protocol} URLs are not fetched, only http and https`);
  const deadline = Date.now() + request.timeoutMs;
  const timedOut = () => new OutboundLimitError('time', `no complete answer within ${request.timeoutMs} ms`);
  const { address, family } = await withTimeout(resolveAllowed(target.hostname, policy.allow, policy.lookup ?? systemLookup), request.timeoutMs, timedOut);
  // The name stays in the URL (Host header, SNI, certificate check); the connection goes to `address`.
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<OutboundResponse>((resolve, reject) => {
    const req = client.request(target, { method: request.method ?? 'GET', headers: request.headers, lookup: pinned, agent: false });
    // An address that is this host's own after all (a local route no interface lists): the kernel
    // connects from the very address it connects to. Dropped before the request is written.
    req.once('socket', (socket) =>
      socket.once('connect', () => {
        if (socket.localAddress === socket.remoteAddress && !isLoopback(address) && !namedExactly(address, policy.allow))
          req.destroy(new EgressDeniedError(target.hostname, address, 'an address of this host'));
      }),
    );
    const timer = setTimeout(() => req.destroy(timedOut()), Math.max(0, deadline - Date.now()));
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > request.maxBytes) req.destroy(new OutboundLimitError('size', `the answer is larger than ${request.maxBytes} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    req.end(request.body);
  });
}

/** The JSON object an answer's body holds, or undefined (not JSON, or not an object). */
export function jsonObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The answer to a tenant's request whose target the outbound policy refused: a 422 that names the
 * rule, not the address (what a tenant's name resolves to inside the operator's network is not theirs
 * to learn), and the same whatever listens there.
 */
export function notAllowedError(code: ErrorCode, what: string, error: EgressDeniedError): AppError {
  return new AppError(
    422,
    code,
    `${what} is at an address Plinth does not connect to (${error.reason}); an operator can allow it with PLINTH_STEP_EGRESS_ALLOW`,
  );
}
