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
 * As undici's: a server that sends nothing for this long, before its headers or within a body, fails the
 * request. The API's event streams send a comment every 15 s, so only a dead connection is this quiet.
 */
const IDLE_TIMEOUT_MS = 300_000;

/** The CLI's fetch. */
export const httpFetch = createHttpFetch();

/**
 * createHttpFetch makes a fetch that resolves to the answer once its headers arrive; the body streams.
 * It fails as undici's fetch does, so callers tell the failures apart the same way: a connection that
 * fails is a TypeError "fetch failed" whose `cause` is the socket's error (ECONNREFUSED...), a body cut
 * short fails its reader with a TypeError "terminated", and an aborted request rejects (or fails its
 * body) with the signal's reason. Redirects are never followed: a 3xx is the answer.
 */
export function createHttpFetch({ idleTimeoutMs = IDLE_TIMEOUT_MS } = {}): typeof fetch {
  return (input, init) => send(input, init, idleTimeoutMs);
}

async function send(input: RequestInfo | URL, init: RequestInit | undefined, idleTimeoutMs: number): Promise<Response> {
  const request = input instanceof Request ? input : new Request(input, init);
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const headers: Record<string, string> = Object.fromEntries(request.headers);
  if (body) headers['content-length'] = String(body.length);
  const { signal } = request;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const { request: open, agent } = clientOf(url.protocol as 'http:' | 'https:');
    let answer: http.IncomingMessage | undefined;
    const outgoing = open(url, { method: request.method, headers, agent }, (incoming) => {
      answer = incoming;
      try {
        resolve(responseOf(incoming, request.method, signal));
      } catch (error) {
        // A status outside 200-599, or a header the Headers class refuses: no answer fetch would give.
        incoming.destroy();
        reject(new TypeError('fetch failed', { cause: error }));
      }
    });
    const end = (reason: unknown) => {
      answer?.destroy(reason as Error);
      outgoing.destroy(reason as Error);
    };
    // Abort ends the request, and a body still streaming: its reader then fails with the signal's reason.
    const onAbort = () => end(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    outgoing.on('close', () => signal.removeEventListener('abort', onAbort));
    outgoing.setTimeout(idleTimeoutMs, () => end(new Error(`the server sent nothing for ${idleTimeoutMs / 1000} s`)));
    // A 101 to a request that asked for no upgrade: the connection is no longer HTTP.
    outgoing.on('upgrade', (_incoming, socket) => {
      socket.destroy();
      reject(new TypeError('fetch failed', { cause: new Error('the server switched protocols') }));
    });
    outgoing.on('error', (error) => reject(signal.aborted ? signal.reason : new TypeError('fetch failed', { cause: error })));
    outgoing.end(body);
  });
}

function responseOf(incoming: http.IncomingMessage, method: string, signal: AbortSignal): Response {
  const status = incoming.statusCode ?? 0;
  const hasBody = method !== 'HEAD' && !NULL_BODY_STATUSES.has(status);
  const response = new Response(hasBody ? bodyOf(incoming, signal) : null, {
    status,
    statusText: incoming.statusMessage,
    headers: headersOf(incoming.rawHeaders),
  });
  if (!hasBody) incoming.resume();
  return response;
}

/**
 * bodyOf reads the answer's body as its reader asks for it (a chunk at a time: a reader that stops
 * stops the socket). A body that ends before its end fails the reader with a TypeError "terminated"
 * whose cause is what cut it, or with the signal's reason when the caller aborted.
 */
function bodyOf(incoming: http.IncomingMessage, signal: AbortSignal): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      incoming.on('data', (chunk: Buffer) => {
        if (settled) return;
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) incoming.pause();
      });
      incoming.on('end', () => {
        if (settled) return;
        settled = true;
        controller.close();
      });
      // Its error is read when the stream closes.
      incoming.on('error', () => {});
      incoming.on('close', () => {
        if (settled) return;
        settled = true;
        const cause = incoming.errored ?? new Error('the connection closed before the body ended');
        controller.error(signal.aborted ? signal.reason : new TypeError('terminated', { cause }));
      });
    },
    pull() {
      incoming.resume();
    },
    cancel() {
      settled = true;
      incoming.destroy();
    },
  });
}

function headersOf(raw: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return headers;
}
