import { execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';

/**
 * A stand-in for a host on the public internet: an HTTP server in a network namespace of its own, at a
 * documentation address (198.51.100.0/24, never routed on the internet), reached from this host over a
 * veth pair. Tests send it traffic and nothing leaves the machine. Needs root and `ip`.
 */
export interface PublicHost {
  /** The server's address, inside its namespace. */
  address: string;
  /** Requests it answered so far. */
  requests(): number;
  close(): void;
}

export async function startPublicHost(): Promise<PublicHost> {
  const tag = process.pid % 100_000;
  const ns = `plinthpub${tag}`;
  // A /30 of the documentation range per test process: two runs of the suite side by side do not collide.
  const block = (process.pid % 63) * 4;
  const [hostSide, far] = [`198.51.100.${block + 1}`, `198.51.100.${block + 2}`];
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    ip('netns', 'del', ns);
  } catch {
    // None left by an earlier run.
  }
  ip('netns', 'add', ns);
  ip('link', 'add', `pv${tag}h`, 'type', 'veth', 'peer', 'name', `pv${tag}p`, 'netns', ns);
  ip('addr', 'add', `${hostSide}/30`, 'dev', `pv${tag}h`);
  ip('link', 'set', `pv${tag}h`, 'up');
  ip('-n', ns, 'addr', 'add', `${far}/30`, 'dev', `pv${tag}p`);
  ip('-n', ns, 'link', 'set', `pv${tag}p`, 'up');
  const script = `require('node:http').createServer((q, s) => { console.log('request'); s.end('hello from the public internet\\n'); }).listen(80, '${far}', () => console.log('ready'));`;
  const server = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let requests = 0;
  let ready!: () => void;
  const listening = new Promise<void>((resolve) => (ready = resolve));
  server.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) {
      if (line === 'ready') ready();
      if (line === 'request') requests++;
    }
  });
  await listening;
  return {
    address: far,
    requests: () => requests,
    close: () => {
      server.kill('SIGKILL');
      ip('netns', 'del', ns);
    },
  };
}

/** A listener on this host that counts the connections it gets (and answers each with `secret`). */
export async function startCountingListener(host: string): Promise<{ port: number; connections(): number; close(): void }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.end('secret\n');
  });
  server.listen(0, host);
  await once(server, 'listening');
  return { port: (server.address() as net.AddressInfo).port, connections: () => connections, close: () => server.close() };
}

/** A DNS server on loopback that answers A queries from `records` (and NXDOMAIN otherwise): the host's resolver, for tests. */
export async function startDnsServer(records: Record<string, string>): Promise<{ server: string; queries(): string[]; close(): void }> {
  const socket = dgram.createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (query, from) => {
    const labels: string[] = [];
    let at = 12;
    while (at < query.length && query[at]! > 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString());
      at += query[at]! + 1;
    }
    const question = query.subarray(12, at + 5);
    const type = query.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    asked.push(name);
    const address = type === 1 ? records[name] : undefined;
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(address || records[name] ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(address ? 1 : 0, 6);
    const answer = address
      ? Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]), Buffer.from(address.split('.').map(Number))])
      : Buffer.alloc(0);
    socket.send(Buffer.concat([header, question, answer]), from.port, from.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { server: `127.0.0.1:${socket.address().port}`, queries: () => asked, close: () => socket.close() };
}
