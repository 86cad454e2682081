// A DNS server on loopback UDP for the tests: it answers TXT queries from records the test sets, and
// NXDOMAIN for any other name. Plinth reaches it through PLINTH_DNS_SERVERS, with Node's own resolver.

import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface DnsStandin {
  /** `127.0.0.1:<port>`, as PLINTH_DNS_SERVERS takes it. */
  server: string;
  /** TXT values by name (lower-case, no trailing dot). */
  txt: Map<string, string[]>;
  close(): Promise<void>;
}

const TYPE_TXT = 16;

export async function startDnsStandin(): Promise<DnsStandin> {
  const txt = new Map<string, string[]>();
  const socket = createSocket('udp4');
  socket.on('message', (query, from) => {
    const { name, end, type } = readQuestion(query);
    const values = type === TYPE_TXT ? txt.get(name) : undefined;
    const answers = (values ?? []).map((value) => answerOf(value));
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    // A response, recursion desired and available; NXDOMAIN (3) for a name with no record.
    header.writeUInt16BE(values ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    socket.send(Buffer.concat([header, query.subarray(12, end), ...answers]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return { server: `127.0.0.1:${port}`, txt, close: () => new Promise((resolve) => socket.close(() => resolve())) };
}

function readQuestion(query: Buffer): { name: string; end: number; type: number } {
  const labels: string[] = [];
  let at = 12;
  while (query[at] !== 0) {
    labels.push(query.subarray(at + 1, at + 1 + query[at]).toString('ascii'));
    at += query[at] + 1;
  }
  at += 1;
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(at), end: at + 4 };
}

/** One TXT answer pointing back at the question's name, its value in strings of up to 255 bytes. */
function answerOf(value: string): Buffer {
  const bytes = Buffer.from(value);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length || i === 0; i += 255) {
    const part = bytes.subarray(i, i + 255);
    chunks.push(Buffer.from([part.length]), part);
  }
  const rdata = Buffer.concat(chunks);
  const fixed = Buffer.alloc(12);
  fixed.writeUInt16BE(0xc00c, 0);
  fixed.writeUInt16BE(TYPE_TXT, 2);
  fixed.writeUInt16BE(1, 4);
  fixed.writeUInt32BE(60, 6);
  fixed.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([fixed, rdata]);
}
