import { compareSemVer, parseSemVer, type SemVer } from '../../src/modules/semver.ts';
import { listTarGz } from './tar.ts';

/**
 * A module registry client written from the protocol, doing what `tofu init` does for
 * `module "x" { source = "<host>/<namespace>/<name>/<system>", version = "<constraint>" }`:
 * service discovery, the versions list, the newest version the constraint allows, the download
 * location, and the package fetched and unpacked the way go-getter does it (src/modules/registry.service.ts
 * says where each step comes from). One liberty: discovery is fetched from `origin` (the test server's
 * `http://127.0.0.1:<port>`) where OpenTofu always uses `https://<host>`.
 */

export interface RegistryModuleAddress {
  namespace: string;
  name: string;
  system: string;
}

export class RegistryError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** The credential OpenTofu holds for the host (TF_TOKEN_<host>), sent as a bearer token to the registry's calls only. */
const credentialHeaders = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});

async function bodyOf(res: globalThis.Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** discover reads `/.well-known/terraform.json` and answers the `modules.v1` base URL, resolved against the document's URL. */
export async function discover(origin: string, token?: string): Promise<URL> {
  const url = new URL('/.well-known/terraform.json', origin);
  const res = await fetch(url, { headers: { accept: 'application/json', ...credentialHeaders(token) } });
  if (res.status !== 200) throw new RegistryError(`discovery answered ${res.status}`, res.status, await bodyOf(res));
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  if (mediaType !== 'application/json') throw new Error(`discovery answered Content-Type ${mediaType}`);
  const services = (await res.json()) as Record<string, unknown>;
  const base = services['modules.v1'];
  if (typeof base !== 'string') throw new Error('the host offers no modules.v1 service');
  const resolved = new URL(base, res.url);
  if (!resolved.pathname.endsWith('/')) resolved.pathname += '/';
  return resolved;
}

const endpoint = (base: URL, m: RegistryModuleAddress, ...rest: string[]) => new URL([m.namespace, m.name, m.system, ...rest].join('/'), base);

/** listVersions is the module's versions as the registry lists them. */
export async function listVersions(base: URL, m: RegistryModuleAddress, token?: string): Promise<string[]> {
  const res = await fetch(endpoint(base, m, 'versions'), { headers: credentialHeaders(token) });
  if (res.status !== 200) throw new RegistryError(`versions answered ${res.status}`, res.status, await bodyOf(res));
  const body = (await res.json()) as { modules: { versions: { version: string }[] }[] };
  return body.modules[0].versions.map((v) => v.version);
}

/** One `<op> <version>` of a constraint, as OpenTofu's version constraints read them. */
function allows(op: string, want: SemVer, wantParts: number, v: SemVer): boolean {
  const c = compareSemVer(v, want);
  switch (op) {
    case '=':
      return c === 0;
    case '!=':
      return c !== 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '~>': {
      // `~> 1.2` allows >= 1.2, < 2.0; `~> 1.2.3` allows >= 1.2.3, < 1.3.0.
      if (c < 0) return false;
      return wantParts >= 3 ? v.major === want.major && v.minor === want.minor : v.major === want.major;
    }
    default:
      throw new Error(`unknown operator ${op}`);
  }
}

/**
 * newestMatching picks the newest version every part of the constraint (`~> 1.0`, `>= 1.2, < 2`, `1.0.0`)
 * allows. A pre-release is taken only when a part names it exactly, as OpenTofu does.
 */
export function newestMatching(versions: string[], constraint: string): string | undefined {
  const parts = constraint.split(',').map((part) => {
    const m = /^\s*(=|!=|>=|<=|>|<|~>)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z.-]+)?\s*$/.exec(part);
    if (!m) throw new Error(`not a version constraint: ${part}`);
    const text = `${m[2]}.${m[3] ?? 0}.${m[4] ?? 0}${m[5] ?? ''}`;
    return { op: m[1] ?? '=', want: parseSemVer(text)!, wantParts: [m[2], m[3], m[4]].filter(Boolean).length, exact: text };
  });
  const candidates = versions
    .map((text) => ({ text, v: parseSemVer(text) }))
    .filter((c): c is { text: string; v: SemVer } => c.v !== undefined)
    .filter((c) => c.v.prerelease.length === 0 || parts.some((p) => p.op === '=' && p.exact === c.text))
    .filter((c) => parts.every((p) => allows(p.op, p.want, p.wantParts, c.v)))
    .sort((a, b) => compareSemVer(b.v, a.v));
  return candidates[0]?.text;
}

/**
 * downloadLocation asks where a version is: 204 with X-Terraform-Get (or 200 with a `location`). A
 * location starting with `/`, `./` or `../` is resolved against the download URL, as OpenTofu does.
 */
export async function downloadLocation(
  base: URL,
  m: RegistryModuleAddress,
  version: string,
  token?: string,
): Promise<{ location: URL; response: globalThis.Response }> {
  const url = endpoint(base, m, version, 'download');
  const res = await fetch(url, { headers: credentialHeaders(token) });
  let raw: string | null;
  if (res.status === 204) raw = res.headers.get('x-terraform-get');
  else if (res.status === 200) raw = ((await res.json()) as { location?: string }).location || res.headers.get('x-terraform-get');
  else throw new RegistryError(`download answered ${res.status}`, res.status, await bodyOf(res));
  if (!raw) throw new Error('the registry returned no location');
  const relative = raw.startsWith('/') || raw.startsWith('./') || raw.startsWith('../');
  if (!relative && !/^https?:\/\//.test(raw)) throw new Error(`a location this client does not fetch: ${raw}`);
  return { location: relative ? new URL(raw, url) : new URL(raw), response: res };
}

/** The archive formats go-getter recognizes by `archive=` or by the path's extension (OpenTofu's list). */
const ARCHIVE_EXTENSIONS = ['zip', 'tar.bz2', 'tbz2', 'tar.gz', 'tgz', 'tar.xz', 'txz'];

export interface FetchedPackage {
  files: Map<string, Buffer>;
  /** The archive's response. */
  response: globalThis.Response;
}

/**
 * fetchPackage does what go-getter's HTTP getter does with an archive URL: the `archive` query parameter
 * or the path's extension says it is one (the magic `archive` and `checksum` parameters are taken out of
 * the query), a HEAD whose answer only matters when it is a 200 with byte ranges, then a GET that must
 * answer 200, with no credential (OpenTofu reads only a .netrc for it); then it unpacks the tar.gz.
 */
export async function fetchPackage(location: URL): Promise<FetchedPackage> {
  const url = new URL(location);
  const forced = url.searchParams.get('archive');
  url.searchParams.delete('archive');
  url.searchParams.delete('checksum');
  const format = forced ?? ARCHIVE_EXTENSIONS.filter((ext) => url.pathname.endsWith(`.${ext}`)).sort((a, b) => b.length - a.length)[0];
  if (format !== 'tar.gz' && format !== 'tgz') throw new Error(`not a tar.gz archive location: ${location}`);
  await (await fetch(url, { method: 'HEAD' })).arrayBuffer();
  const res = await fetch(url);
  if (res.status !== 200) throw new RegistryError(`the archive answered ${res.status}`, res.status, await bodyOf(res));
  const bytes = Buffer.from(await res.arrayBuffer());
  return { files: untarGz(bytes), response: res };
}

/** The regular files of a .tar.gz by path, as an unpacking client keeps them. */
export function untarGz(archive: Buffer): Map<string, Buffer> {
  return new Map(
    listTarGz(archive)
      .filter((e) => e.type === 'file')
      .map((e) => [e.name.replace(/^\.\//, ''), e.content]),
  );
}

export interface Installed {
  version: string;
  files: Map<string, Buffer>;
  location: URL;
  archive: globalThis.Response;
  download: globalThis.Response;
}

/** install resolves and fetches a module as `tofu init` does for one module block. */
export async function install(origin: string, m: RegistryModuleAddress, constraint: string, token?: string): Promise<Installed> {
  const base = await discover(origin, token);
  const versions = await listVersions(base, m, token);
  const version = newestMatching(versions, constraint);
  if (!version) throw new Error(`no version of ${versions.join(', ')} matches ${constraint}`);
  const { location, response: download } = await downloadLocation(base, m, version, token);
  const fetched = await fetchPackage(location);
  return { version, files: fetched.files, location, archive: fetched.response, download };
}
