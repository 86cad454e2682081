import dgram from 'node:dgram';
import { getServers } from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { Logger } from '../../platform/logger.ts';
import { EgressDeniedError, type AllowList } from '../../platform/outbound/address-policy.ts';
import { resolveAllowed, systemLookup, type Lookup } from '../../platform/outbound/resolve.ts';

/**
 * A step's way out under `PLINTH_SANDBOX_NETWORK=policy`. The step has a network namespace of its own
 * with loopback alone: nothing it sends can leave it. Inside that namespace, on loopback, listen
 * sockets that the worker holds (a helper made them there and handed them over, stepnet-helper.mjs):
 *
 * - an HTTP proxy (the step's `HTTPS_PROXY`/`HTTP_PROXY`): CONNECT for HTTPS and anything tunnelled,
 *   absolute-URI requests for plain HTTP. The worker connects on the step's behalf from the host's
 *   network, to an address it resolved and checked itself (address-policy.ts);
 * - a DNS resolver at 127.0.0.1:53 that relays the step's queries to the host's resolvers, so names
 *   resolve as on the host (what they resolve to still has to pass the proxy);
 * - when the state backend is on the host's loopback, its port, forwarded to it: OpenTofu's HTTP client
 *   never proxies a loopback address.
 */
export interface EgressPolicy {
  /** The operator's allowlist (`PLINTH_STEP_EGRESS_ALLOW`). */
  allow: AllowList;
  /** Host and port pairs a step may always reach, however they resolve: the state backend. */
  endpoints: ReadonlyArray<{ host: string; port: number }>;
  lookup: Lookup;
  /** Where the step's DNS queries go: `address` or `address:port` (`[v6]:port`), the host's resolvers by default. */
  dnsServers: readonly string[];
}

export function defaultEgressPolicy(allow: AllowList, endpoints: EgressPolicy['endpoints']): EgressPolicy {
  return { allow, endpoints, lookup: systemLookup, dnsServers: getServers() };
}

/** The port of the step's proxy inside its namespace (the backend's port when they would clash is moved). */
export const PROXY_PORT = 3128;

/** The sockets a step's network helper made in its namespace, now the worker's. */
export interface StepListeners {
  proxy: net.Server;
  dns: dgram.Socket;
  /** One per forwarded loopback endpoint, by port. */
  tunnels: ReadonlyArray<{ server: net.Server; port: number }>;
}

/** Connections of one step open at once through its proxy and tunnels; more wait in the kernel's backlog. */
const MAX_CONNECTIONS = 256;
/** DNS queries of one step awaiting their answer; more are dropped (the step's resolver retries). */
const MAX_DNS_IN_FLIGHT = 64;
const DNS_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 30_000;

/** The endpoints that are forwarded into the step's namespace: those on the host's loopback. */
export function loopbackEndpoints(policy: Pick<EgressPolicy, 'endpoints'>): number[] {
  return [...new Set(policy.endpoints.filter((e) => isLoopbackName(e.host)).map((e) => e.port))];
}

function isLoopbackName(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\./.test(bare);
}

/** Serves one step's listeners until the returned function closes them. */
export function serveStepEgress(listeners: StepListeners, policy: EgressPolicy, log: Logger): () => void {
  const proxy = proxyServer(policy, log);
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };
  listeners.proxy.maxConnections = MAX_CONNECTIONS;
  listeners.proxy.on('connection', (socket: net.Socket) => {
    track(socket);
    proxy.emit('connection', socket);
  });
  for (const { server, port } of listeners.tunnels) {
    server.maxConnections = MAX_CONNECTIONS;
    const endpoint = policy.endpoints.find((e) => e.port === port && isLoopbackName(e.host))!;
    server.on('connection', (socket: net.Socket) => {
      track(socket);
      forward(socket, endpoint.host, port, policy, log);
    });
  }
  const stopDns = relayDns(listeners.dns, policy.dnsServers);
  return () => {
    for (const server of [listeners.proxy, ...listeners.tunnels.map((t) => t.server)]) server.close();
    stopDns();
    for (const socket of open) socket.destroy();
  };
}

/** Whether `host:port` is one of the policy's endpoints (the state backend), which skip the address check. */
function isEndpoint(policy: EgressPolicy, host: string, port: number): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return policy.endpoints.some((e) => e.port === port && e.host.replace(/^\[|\]$/g, '').toLowerCase() === bare);
}

async function addressFor(policy: EgressPolicy, host: string, port: number) {
  if (isEndpoint(policy, host, port)) {
    const bare = host.replace(/^\[|\]$/g, '');
    if (net.isIP(bare)) return { address: bare, family: net.isIP(bare) };
    const [first] = await policy.lookup(bare);
    if (!first) throw new Error(`${host} does not resolve`);
    return first;
  }
  return resolveAllowed(host, policy.allow, policy.lookup);
}

function proxyServer(policy: EgressPolicy, log: Logger): http.Server {
  const server = http.createServer({ requestTimeout: 60_000, headersTimeout: 30_000 });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    client.on('error', () => {});
    const target = parseAuthority(req.url ?? '');
    if (!target) return refuse(client, 400, `"${req.url}" is not host:port`);
    void addressFor(policy, target.host, target.port).then(
      ({ address }) => {
        const upstream = net.connect({ host: address, port: target.port, timeout: CONNECT_TIMEOUT_MS });
        upstream.once('timeout', () => upstream.destroy(new Error('timed out')));
        upstream.once('connect', () => {
          upstream.setTimeout(0);
          client.write('HTTP/1.1 200 Connection established\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(client).on('error', () => {});
          client.pipe(upstream);
        });
        upstream.on('error', (error) => (client.writable && !upstream.readable ? refuse(client, 502, `${target.host}:${target.port}: ${error.message}`) : client.destroy()));
        client.once('close', () => upstream.destroy());
      },
      (error: Error) => deny(client, error, target.host, log),
    );
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return answer(res, 400, 'this is a proxy: send absolute http:// URLs, or CONNECT for https');
    }
    if (url.protocol !== 'http:') return answer(res, 400, `only http:// is proxied this way (use CONNECT for ${url.protocol})`);
    const port = Number(url.port || 80);
    void addressFor(policy, url.hostname, port).then(
      ({ address }) => {
        const headers = { ...req.headers };
        for (const hop of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']) delete headers[hop];
        const upstream = http.request({ host: address, port, method: req.method, path: `${url.pathname}${url.search}`, headers: { ...headers, connection: 'close' }, setHost: false, timeout: CONNECT_TIMEOUT_MS });
        upstream.on('response', (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        });
        upstream.on('timeout', () => upstream.destroy(new Error('timed out')));
        upstream.on('error', (error) => (res.headersSent ? res.destroy() : answer(res, 502, `${url.host}: ${error.message}`)));
        req.pipe(upstream);
      },
      (error: Error) => {
        if (error instanceof EgressDeniedError) log.info({ host: url.hostname, address: error.address, reason: error.reason }, 'step egress refused');
        answer(res, error instanceof EgressDeniedError ? 403 : 502, error.message);
      },
    );
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

/** A raw TCP forward of one connection to a loopback endpoint (the state backend). */
function forward(client: net.Socket, host: string, port: number, policy: EgressPolicy, log: Logger) {
  client.on('error', () => {});
  void addressFor(policy, host, port).then(
    ({ address }) => {
      const upstream = net.connect({ host: address, port });
      upstream.on('error', () => client.destroy());
      client.once('close', () => upstream.destroy());
      upstream.pipe(client);
      client.pipe(upstream);
    },
    (error: Error) => {
      log.warn({ host, port, err: error.message }, 'step could not reach the state backend');
      client.destroy();
    },
  );
}

function deny(client: net.Socket, error: Error, host: string, log: Logger) {
  if (error instanceof EgressDeniedError) log.info({ host, address: error.address, reason: error.reason }, 'step egress refused');
  refuse(client, error instanceof EgressDeniedError ? 403 : 502, error.message);
}

function refuse(client: net.Socket, status: number, message: string) {
  const body = `${message}\n`;
  client.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

function answer(res: http.ServerResponse, status: number, message: string) {
  res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(`${message}\n`);
}

/** `host:port` of a CONNECT, or undefined. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@\s]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[2]);
  return port >= 1 && port <= 65535 ? { host: match[1]!, port } : undefined;
}

/** Relays the step's DNS queries to the first upstream server and its answers back; returns a stop function. */
function relayDns(inside: dgram.Socket, servers: readonly string[]): () => void {
  const server = parseServer(servers[0] ?? '127.0.0.1');
  const upstream = dgram.createSocket(server.family === 6 ? 'udp6' : 'udp4');
  upstream.on('error', () => {});
  inside.on('error', () => {});
  const pending = new Map<number, { address: string; port: number; timer: NodeJS.Timeout }>();
  inside.on('message', (query: Buffer, from: dgram.RemoteInfo) => {
    if (query.length < 12 || pending.size >= MAX_DNS_IN_FLIGHT) return;
    const id = query.readUInt16BE(0);
    clearTimeout(pending.get(id)?.timer);
    pending.set(id, { address: from.address, port: from.port, timer: setTimeout(() => pending.delete(id), DNS_TIMEOUT_MS) });
    upstream.send(query, server.port, server.address);
  });
  upstream.on('message', (reply: Buffer, from: dgram.RemoteInfo) => {
    if (reply.length < 12 || from.port !== server.port) return;
    const waiting = pending.get(reply.readUInt16BE(0));
    if (!waiting) return;
    clearTimeout(waiting.timer);
    pending.delete(reply.readUInt16BE(0));
    inside.send(reply, waiting.port, waiting.address);
  });
  return () => {
    for (const { timer } of pending.values()) clearTimeout(timer);
    pending.clear();
    for (const socket of [inside, upstream]) {
      try {
        socket.close();
      } catch {
        // Already closed.
      }
    }
  };
}

/** `address`, `address:port`, `[v6]` or `[v6]:port`, as dns.getServers() writes them. */
export function parseServer(entry: string): { address: string; port: number; family: 4 | 6 } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (v6) return { address: v6[1]!, port: Number(v6[2] ?? 53), family: 6 };
  if (net.isIP(entry) === 6) return { address: entry, port: 53, family: 6 };
  const [address, port] = entry.split(':') as [string, string | undefined];
  return { address, port: Number(port ?? 53), family: 4 };
}
