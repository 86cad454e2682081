// Makes a step's listen sockets inside the step's own network namespace, for the worker to serve
// (egress.ts). The spawner runs it as `unshare --net sh -c 'ip link set lo up && exec node THIS PORTS'`
// (rootless, `unshare --user --map-root-user --net`): a new namespace with loopback up and nothing else. It binds, on 127.0.0.1, the proxy's port (the first
// argument), UDP 53 for DNS and each port to forward (the rest), hands every socket to the spawner over
// the IPC channel, and exits when the spawner disconnects (by then the spawner holds the namespace open,
// and the worker the sockets).
import dgram from 'node:dgram';
import net from 'node:net';

const [proxyPort, ...tunnelPorts] = process.argv.slice(2).map(Number);

function listen(port, host) {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ host, port, backlog: 128 }, () => resolve(server));
  });
}

/** A forwarded port answers on both loopback addresses (one dual-stack socket), or on 127.0.0.1 where IPv6 is off. */
const listenBoth = (port) => listen(port, '::').catch(() => listen(port, '127.0.0.1'));

function bindDns() {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    socket.once('error', reject);
    socket.bind({ address: '127.0.0.1', port: 53 }, () => resolve(socket));
  });
}

const sent = (message, handle) => new Promise((resolve, reject) => process.send(message, handle, (error) => (error ? reject(error) : resolve())));

process.on('disconnect', () => process.exit(0));
// The same when 'disconnect' is held back by a handle awaiting its acknowledgement (spawner-child.mjs);
// and its work takes milliseconds: whatever happens, it is gone within a minute.
setInterval(() => process.connected || process.exit(0), 1_000).unref();
setTimeout(() => process.exit(1), 60_000).unref();
try {
  await sent({ op: 'proxy' }, await listen(proxyPort, '127.0.0.1'));
  await sent({ op: 'dns' }, await bindDns());
  for (const port of tunnelPorts) await sent({ op: 'tunnel', port }, await listenBoth(port));
} catch (error) {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
