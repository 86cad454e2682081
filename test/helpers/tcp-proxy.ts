import net from 'node:net';

/**
 * A TCP proxy on loopback in front of PostgreSQL that a test can cut: every open connection is
 * dropped and new ones are refused until it is restored, which is what clients see while the
 * database restarts or fails over.
 */
export interface TcpProxy {
  port: number;
  /** Drops every connection and refuses new ones for `ms`, then accepts again. */
  cut(ms: number): Promise<void>;
  /** The same, for at least `minMs` and then until `over()` holds (checked every 100 ms, at most `maxMs` in all). */
  cutUntil(over: () => boolean, minMs: number, maxMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const stopListening = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    port,
    cut: async (ms) => {
      const closed = stopListening();
      for (const s of sockets) s.destroy();
      await closed;
      await new Promise((r) => setTimeout(r, ms));
      await listen(port);
    },
    cutUntil: async (over, minMs, maxMs) => {
      const closed = stopListening();
      for (const s of sockets) s.destroy();
      await closed;
      const start = Date.now();
      while (Date.now() - start < maxMs && (Date.now() - start < minMs || !over())) await new Promise((r) => setTimeout(r, 100));
      await listen(port);
    },
    close: async () => {
      const closed = stopListening();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
