// The console's static files: its stylesheet and script (checked in beside this file) and htmx with its SSE
// extension (from node_modules, installed with the rest). Served with @fastify/static's sendFile under
// a path that holds a hash of their contents, so a browser may keep them a year and never run a stale one.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { Type } from '@sinclair/typebox';
import { NotFoundError } from '../platform/errors.ts';
import type { App } from '../platform/http/app.ts';

const require = createRequire(import.meta.url);

/** Every file served, by the name a page links it with. */
const FILES: Record<string, string> = {
  'console.css': fileURLToPath(new URL('./assets/console.css', import.meta.url)),
  'console.js': fileURLToPath(new URL('./assets/console.js', import.meta.url)),
  'htmx.min.js': require.resolve('htmx.org/dist/htmx.min.js'),
  'sse.min.js': require.resolve('htmx-ext-sse/dist/sse.min.js'),
};

export interface Assets {
  /** The URL of a served file. */
  url(name: keyof typeof FILES & string): string;
}

/** registerAssets serves the files and returns their URLs; call it once per app. */
export async function registerAssets(app: App): Promise<Assets> {
  const digest = createHash('sha256');
  for (const name of Object.keys(FILES).sort()) digest.update(name).update(readFileSync(FILES[name]));
  const version = digest.digest('hex').slice(0, 16);
  // sendFile only, from the one route below: a wildcard route over the files' directories would serve
  // whatever else they hold.
  await app.register(fastifyStatic, { root: path.dirname(FILES['console.css']), serve: false });
  app.get('/assets/:version/:name', { config: { public: true, audit: false }, schema: { hide: true, params: AssetParams } }, async (request, reply) => {
    const file = Object.hasOwn(FILES, request.params.name) ? FILES[request.params.name] : undefined;
    if (request.params.version !== version || !file) throw new NotFoundError('Route', request.url);
    return reply.sendFile(path.basename(file), path.dirname(file), { immutable: true, maxAge: '365d' });
  });
  return { url: (name) => `/assets/${version}/${name}` };
}

const AssetParams = Type.Object({ version: Type.String({ maxLength: 64 }), name: Type.String({ maxLength: 64 }) });
