// The CLI's transport: fetch's interface over node:http and node:https.
//
// Node 20's global fetch is undici, whose first request compiles its HTTP parser (WebAssembly) and sets
// up its connection pool; the process then also waits for V8 to finish optimising that parser before it
// may exit. Together that costs about 150 ms on every command that calls the API, several times what
// the rest of the command takes. Node's own HTTP client costs a few milliseconds.
// The SDK takes any fetch (its `fetch` option); the requests and answers stay the standard Request and
// Response, so everything above this file is the same whichever transport runs.

import type http from 'node:http';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';

// Loaded at the first request: a command that sends none (version, help, completion) would spend a
// sixth of its start loading them, and https also loads TLS.
const load = createRequire(import.meta.url);

interface Client {
  request: typeof http.request;
  agent: http.Agent;
}

const clients = new Map<string, Client>();

function clientOf(protocol: 'http:' | 'https:'): Client {
  let client = clients.get(protocol);
  if (!client) {
    const module: typeof http = load(protocol === 'https:' ? 'node:https' : 'node:http');
    // Free sockets of a keep-alive agent are unreferenced: they serve the next request of the same
    // command (pages, polls) and never hold the process open once it is done.
    client = { request: module.request, agent: new module.Agent({ keepAlive: true }) };
    clients.set(protocol, client);
  }
  return client;
}

/** Statuses whose answer has no body (the Response constructor refuses one for them). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * httpFetch sends `input` and resolves to the answer once its headers arrive; the body streams. It
 * fails as undici's fetch does, so callers tell the failures apart the same way: a connection that
 * fails is a TypeError "fetch failed" whose `cause` is the socket's error (ECONNREFUSED...), and an
 * aborted request rejects with the signal's reason. Redirects are never followed: a 3xx is the answer.
 */
export async function httpFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = input instanceof Request ? input : new Request(input, init);
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const headers: Record<string, string> = Object.fromEntries(request.headers);
  if (body) headers['content-length'] = String(body.length);
  const { signal } = request;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const { request: send, agent } = clientOf(url.protocol as 'http:' | 'https:');
    let answer: http.IncomingMessage | undefined;
    const outgoing = send(url, { method: request.method, headers, agent }, (incoming) => {
      answer = incoming;
      try {
        resolve(responseOf(incoming, request.method));
      } catch (error) {
        // A status outside 200-599, or a header the Headers class refuses: no answer fetch would give.
        incoming.destroy();
        reject(new TypeError('fetch failed', { cause: error }));
      }
    });
    // Abort ends the request, and a body still streaming: its reader then fails with the signal's reason.
    const onAbort = () => {
      answer?.destroy(signal.reason);
      outgoing.destroy(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    outgoing.on('close', () => signal.removeEventListener('abort', onAbort));
    outgoing.on('error', (error) => reject(signal.aborted ? signal.reason : new TypeError('fetch failed', { cause: error })));
    outgoing.end(body);
  });
}

function responseOf(incoming: http.IncomingMessage, method: string): Response {
  const status = incoming.statusCode ?? 0;
  const hasBody = method !== 'HEAD' && !NULL_BODY_STATUSES.has(status);
  const response = new Response(hasBody ? (Readable.toWeb(incoming) as ReadableStream<Uint8Array>) : null, {
    status,
    statusText: incoming.statusMessage,
    headers: headersOf(incoming.rawHeaders),
  });
  if (!hasBody) incoming.resume();
  return response;
}

function headersOf(raw: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return headers;
}
