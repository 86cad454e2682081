// A minimal reader of the .tar.gz archives Plinth serves and keeps, for the tests to look inside them.

import { gunzipSync } from 'node:zlib';

export interface TarEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | string;
  content: Buffer;
  linkName: string;
}

/** The entries of a .tar.gz, read with a minimal ustar header reader (pax headers skipped). */
export function listTarGz(archive: Buffer): TarEntry[] {
  const tar = gunzipSync(archive);
  const entries: TarEntry[] = [];
  const text = (from: number, length: number) =>
    tar
      .subarray(from, from + length)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= tar.length; ) {
    if (tar.subarray(at, at + 512).every((b) => b === 0)) break;
    const size = parseInt(text(at + 124, 12).trim() || '0', 8);
    const flag = String.fromCharCode(tar[at + 156]);
    const prefix = text(at + 345, 155);
    const name = (prefix ? `${prefix}/` : '') + text(at, 100);
    const content = tar.subarray(at + 512, at + 512 + size);
    if (flag !== 'g' && flag !== 'x') {
      const type = flag === '5' ? 'dir' : flag === '2' ? 'symlink' : flag === '0' || flag === '\0' ? 'file' : flag;
      entries.push({ name, type, content: Buffer.from(content), linkName: text(at + 157, 100) });
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}
