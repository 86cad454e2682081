import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import { getServers } from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { Logger } from '../../platform/logger.ts';
import { bareHost, EgressDeniedError, hostAllowed, isLoopback, namedExactly, narrowedOut, type AllowList } from '../../platform/outbound/address-policy.ts';
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
  /** The current step's narrowing (its execution environment's `egressAllow`), read at each connection: it reaches only what this allows too. */
  readonly narrowing?: AllowList;
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

/** Connections of one step at once through its proxy and tunnels; the kernel closes the ones past it. */
const MAX_CONNECTIONS = 256;
/** DNS queries of one step awaiting their answer, and per second; more are dropped (the step's resolver retries). */
const MAX_DNS_IN_FLIGHT = 64;
const MAX_DNS_PER_SECOND = 100;
const DNS_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 30_000;
/** A proxy connection that has not sent its request's head within this is closed. */
const REQUEST_HEAD_MS = 30_000;
/** A connection (a tunnel, a forwarded one, a request) idle this long in both directions is closed. */
const IDLE_MS = 10 * 60_000;

/** The endpoints that are forwarded into the step's namespace: those on the host's loopback. */
export function loopbackEndpoints(policy: Pick<EgressPolicy, 'endpoints'>): number[] {
  return [...new Set(policy.endpoints.filter((e) => isLoopbackName(e.host)).map((e) => e.port))];
}

/** A host that is this host's loopback (or unspecified) address by its spelling: `localhost`, `127.x`, `::1`, `0.0.0.0`. */
function isLoopbackName(host: string): boolean {
  const bare = bareHost(host);
  return bare === 'localhost' || (net.isIP(bare) !== 0 && isLoopback(bare));
}

/**
 * Every socket of one step's egress, the step's side and the worker's: all are destroyed when the step
 * ends, and a socket whose other side went away takes its partner with it, whenever that happens
 * (before the name resolved, while connecting, or later).
 */
class StepSockets {
  private readonly open = new Set<net.Socket>();
  private closed = false;

  track(socket: net.Socket, idleMs = IDLE_MS): net.Socket {
    if (this.closed) {
      socket.destroy();
      return socket;
    }
    this.open.add(socket);
    socket.once('close', () => this.open.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setTimeout(idleMs, () => socket.destroy());
    return socket;
  }

  /** Joins two sockets: bytes both ways, and the end of either ends both. */
  splice(a: net.Socket, b: net.Socket) {
    a.once('close', () => b.destroy());
    b.once('close', () => a.destroy());
    a.pipe(b);
    b.pipe(a);
  }

  /** Destroys every open socket; with `forGood`, every later one too. */
  closeAll(forGood: boolean) {
    this.closed ||= forGood;
    for (const socket of this.open) socket.destroy();
  }
}

/** The egress of a network a sandbox's steps use one after another. */
export interface ServedEgress {
  /** Ends what the last step left: its connections and its DNS queries awaiting an answer. */
  endStep(): void;
  /** Closes the listeners and everything above. */
  close(): void;
}

/** Serves a step network's listeners until closed; `narrowing` says, at each connection, what narrows the current step. */
export function serveStepEgress(
  listeners: StepListeners,
  installation: EgressPolicy,
  log: Logger,
  narrowing: () => AllowList | undefined = () => undefined,
): ServedEgress {
  const policy: EgressPolicy = {
    ...installation,
    get narrowing() {
      return narrowing();
    },
  };
  const sockets = new StepSockets();
  const proxy = proxyServer(policy, log, sockets);
  // An accept that fails (out of descriptors) must not end the worker: the step's connection fails alone.
  const report = (error: Error) => log.warn({ err: error.message }, "a step's egress listener failed");
  for (const server of [listeners.proxy, ...listeners.tunnels.map((t) => t.server)]) server.on('error', report);
  listeners.proxy.maxConnections = MAX_CONNECTIONS;
  listeners.proxy.on('connection', (socket: net.Socket) => {
    // Node's own header timeouts start only on a server that listens itself: this one is handed its sockets.
    proxy.emit('connection', sockets.track(socket, REQUEST_HEAD_MS));
  });
  for (const { server, port } of listeners.tunnels) {
    server.maxConnections = MAX_CONNECTIONS;
    const endpoint = policy.endpoints.find((e) => e.port === port && isLoopbackName(e.host))!;
    server.on('connection', (socket: net.Socket) => forward(sockets.track(socket), endpoint.host, port, policy, sockets, log));
  }
  // Under a narrowing, only the names it lists resolve: a step cannot send what it likes out in its queries.
  const dns = relayDns(listeners.dns, policy.dnsServers, (name) => !policy.narrowing || hostAllowed(policy.narrowing, name));
  return {
    endStep: () => {
      dns.forget();
      sockets.closeAll(false);
    },
    close: () => {
      for (const server of [listeners.proxy, ...listeners.tunnels.map((t) => t.server)]) server.close();
      dns.close();
      sockets.closeAll(true);
    },
  };
}

/** Whether `host:port` is one of the policy's endpoints (the state backend), which skip the address check. */
function isEndpoint(policy: EgressPolicy, host: string, port: number): boolean {
  return policy.endpoints.some((e) => e.port === port && bareHost(e.host) === bareHost(host));
}

/**
 * The address to connect to for a step, and whether the policy allowed it by name (the state backend,
 * or an allowlist entry naming exactly that address), so that it may be this host's own.
 */
async function addressFor(policy: EgressPolicy, host: string, port: number): Promise<{ address: string; explicit: boolean }> {
  if (isEndpoint(policy, host, port)) {
    const bare = bareHost(host);
    if (net.isIP(bare)) return { address: bare, explicit: true };
    const [first] = await policy.lookup(bare);
    if (!first) throw new Error(`${host} does not resolve`);
    return { address: first.address, explicit: true };
  }
  const { address } = await resolveAllowed(host, policy.allow, policy.lookup);
  const narrowed = policy.narrowing && narrowedOut(host, address, policy.narrowing);
  if (narrowed) throw new EgressDeniedError(host, address, narrowed);
  return { address, explicit: namedExactly(address, policy.allow) };
}

/**
 * Connects to a checked address for a step, unless its side is gone already. An address that turns out
 * to be this host's own (a local route the policy's list of interfaces did not show: the kernel then
 * connects from the address it connects to) is dropped before a byte is sent.
 */
function connectFor(
  client: net.Socket,
  sockets: StepSockets,
  { address, explicit }: { address: string; explicit: boolean },
  port: number,
  onConnect: (upstream: net.Socket) => void,
  onError: (error: Error) => void,
) {
  if (client.destroyed) return;
  const upstream = sockets.track(net.connect({ host: address, port }), CONNECT_TIMEOUT_MS);
  let connected = false;
  upstream.once('connect', () => {
    if (upstream.localAddress === upstream.remoteAddress && !isLoopback(address) && !explicit) {
      upstream.destroy();
      return onError(new EgressDeniedError(address, address, 'an address of this host'));
    }
    connected = true;
    upstream.setTimeout(IDLE_MS);
    onConnect(upstream);
  });
  // Once connected, an error ends both sides (StepSockets); before, the step is told why.
  upstream.once('error', (error) => connected || onError(error));
  upstream.once('timeout', () => connected || onError(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000} s`)));
  client.once('close', () => upstream.destroy());
}

function proxyServer(policy: EgressPolicy, log: Logger, sockets: StepSockets): http.Server {
  const server = http.createServer();
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    client.setTimeout(IDLE_MS);
    const target = parseAuthority(req.url ?? '');
    if (!target) return refuse(client, 400, `"${req.url}" is not host:port`);
    void addressFor(policy, target.host, target.port).then(
      (to) =>
        connectFor(
          client,
          sockets,
          to,
          target.port,
          (upstream) => {
            client.write('HTTP/1.1 200 Connection established\r\n\r\n');
            if (head.length) upstream.write(head);
            sockets.splice(client, upstream);
          },
          (error) => deny(client, error, target.host, log),
        ),
      (error: Error) => deny(client, error, target.host, log),
    );
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.socket.setTimeout(IDLE_MS);
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return answer(res, 400, 'this is a proxy: send absolute http:// URLs, or CONNECT for https');
    }
    if (url.protocol !== 'http:') return answer(res, 400, `only http:// is proxied this way (use CONNECT for ${url.protocol})`);
    const port = Number(url.port || 80);
    const refused = (error: Error) => {
      if (error instanceof EgressDeniedError) log.info({ host: url.hostname, address: error.address, reason: error.reason }, 'step egress refused');
      if (res.headersSent) res.destroy();
      else answer(res, error instanceof EgressDeniedError ? 403 : 502, error.message);
    };
    void addressFor(policy, url.hostname, port).then(
      (to) =>
        connectFor(
          req.socket,
          sockets,
          to,
          port,
          (upstream) => {
            const headers = { ...req.headers };
            for (const hop of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']) delete headers[hop];
            const forwarded = http.request({
              createConnection: () => upstream,
              method: req.method,
              path: `${url.pathname}${url.search}`,
              headers: { ...headers, connection: 'close' },
              setHost: false,
            });
            forwarded.on('response', (reply) => {
              res.writeHead(reply.statusCode ?? 502, reply.headers);
              reply.pipe(res);
            });
            forwarded.on('error', refused);
            res.once('close', () => upstream.destroy());
            req.pipe(forwarded);
          },
          refused,
        ),
      refused,
    );
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  return server;
}

/** A raw TCP forward of one connection to a loopback endpoint (the state backend). */
function forward(client: net.Socket, host: string, port: number, policy: EgressPolicy, sockets: StepSockets, log: Logger) {
  void addressFor(policy, host, port).then(
    (to) =>
      connectFor(
        client,
        sockets,
        to,
        port,
        (upstream) => sockets.splice(client, upstream),
        () => client.destroy(),
      ),
    (error: Error) => {
      log.warn({ host, port, err: error.message }, 'step could not reach the state backend');
      client.destroy();
    },
  );
}

function deny(client: net.Socket, error: Error, host: string, log: Logger) {
  if (error instanceof EgressDeniedError) log.info({ host, address: error.address, reason: error.reason }, 'step egress refused');
  refuse(client, error instanceof EgressDeniedError ? 403 : 502, error instanceof EgressDeniedError ? error.message : `${host}: ${error.message}`);
}

function refuse(client: net.Socket, status: number, message: string) {
  if (client.destroyed) return;
  const body = `${message}\n`;
  client.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
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

/**
 * Relays the step's DNS queries to the first upstream server and its answers back until closed. Only
 * standard queries of one question pass (no UPDATE, NOTIFY or answers), and only for a name `asks`
 * allows (an execution environment's narrowing). Each goes out under an id of the relay's own, on a
 * socket connected to the server, so only the server's answers come back, matched to the query they
 * answer. `forget` ends a step's part: its queries awaiting an answer, and the socket they went out on.
 */
function relayDns(inside: dgram.Socket, servers: readonly string[], asks: (name: string) => boolean): { forget(): void; close(): void } {
  const server = parseServer(servers[0] ?? '127.0.0.1');
  inside.on('error', () => {});
  const pending = new Map<number, { id: number; address: string; port: number; timer: NodeJS.Timeout }>();
  let connected = false;
  const open = () => {
    const socket = dgram.createSocket(server.family === 6 ? 'udp6' : 'udp4');
    socket.on('error', () => {});
    connected = false;
    socket.connect(server.port, server.address, () => {
      if (socket === upstream) connected = true;
    });
    socket.on('message', (reply: Buffer) => {
      if (socket !== upstream || reply.length < 12) return;
      const waiting = pending.get(reply.readUInt16BE(0));
      if (!waiting) return;
      clearTimeout(waiting.timer);
      pending.delete(reply.readUInt16BE(0));
      const answer = Buffer.from(reply);
      answer.writeUInt16BE(waiting.id, 0);
      inside.send(answer, waiting.port, waiting.address);
    });
    return socket;
  };
  let upstream = open();
  let second = 0;
  let sentThisSecond = 0;
  inside.on('message', (query: Buffer, from: dgram.RemoteInfo) => {
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) [second, sentThisSecond] = [now, 0];
    if (!connected || !isStandardQuery(query) || pending.size >= MAX_DNS_IN_FLIGHT || ++sentThisSecond > MAX_DNS_PER_SECOND) return;
    const name = questionName(query);
    if (name === undefined || !asks(name)) return;
    let ours = randomInt(0x10000);
    while (pending.has(ours)) ours = (ours + 1) & 0xffff;
    pending.set(ours, { id: query.readUInt16BE(0), address: from.address, port: from.port, timer: setTimeout(() => pending.delete(ours), DNS_TIMEOUT_MS) });
    const relayed = Buffer.from(query);
    relayed.writeUInt16BE(ours, 0);
    upstream.send(relayed);
  });
  const closeQuietly = (socket: dgram.Socket) => {
    try {
      socket.close();
    } catch {
      // Already closed.
    }
  };
  const forget = () => {
    for (const { timer } of pending.values()) clearTimeout(timer);
    pending.clear();
    // A late answer to the last step's query cannot reach the next one: it goes to a closed socket.
    const last = upstream;
    upstream = open();
    closeQuietly(last);
  };
  return {
    forget,
    close: () => {
      for (const { timer } of pending.values()) clearTimeout(timer);
      pending.clear();
      closeQuietly(inside);
      closeQuietly(upstream);
    },
  };
}

/** The name a query asks about, in lower case without the final dot; undefined when it does not read as one. */
function questionName(message: Buffer): string | undefined {
  const labels: string[] = [];
  let at = 12;
  while (at < message.length) {
    const length = message[at]!;
    if (length === 0) return labels.join('.').toLowerCase();
    // No compression pointer belongs in a question's name; a label is at most 63 bytes.
    if (length > 63 || at + 1 + length > message.length) return undefined;
    labels.push(message.toString('latin1', at + 1, at + 1 + length));
    at += 1 + length;
  }
  return undefined;
}

/** A query (QR 0), of the standard opcode, with exactly one question. */
function isStandardQuery(message: Buffer): boolean {
  if (message.length < 12 || message.length > 4096) return false;
  const flags = message.readUInt16BE(2);
  return (flags & 0x8000) === 0 && ((flags >> 11) & 0xf) === 0 && message.readUInt16BE(4) === 1;
}

/** `address`, `address:port`, `[v6]` or `[v6]:port`, as dns.getServers() writes them. */
function parseServer(entry: string): { address: string; port: number; family: 4 | 6 } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (v6) return { address: v6[1]!, port: Number(v6[2] ?? 53), family: 6 };
  if (net.isIP(entry) === 6) return { address: entry, port: 53, family: 6 };
  const [address, port] = entry.split(':') as [string, string | undefined];
  return { address, port: Number(port ?? 53), family: 4 };
}
