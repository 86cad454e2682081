// The module registry protocol (`modules.v1`), as OpenTofu's client speaks it, so that `tofu init`
// installs published module versions (docs/module-registry.md). What the client does, as read in
// OpenTofu's source (internal/registry/client.go, internal/getmodules/installer.go, svchost's
// disco/disco.go and svcauth, registry-address's module.go) and its protocol page
// (website/docs/internals/module-registry-protocol.mdx):
//
// - Discovery: `GET https://<host>/.well-known/terraform.json`, answered as application/json; the
//   `modules.v1` value is the protocol's base URL (a relative one resolves against the document's URL).
// - Credentials: `TF_TOKEN_<host>` (dots written `_`, dashes `__`) or the CLI configuration's
//   `credentials "<host>"` block is sent as `Authorization: Bearer <token>` with the discovery request
//   and with both calls below, and with nothing else.
// - `GET <base><namespace>/<name>/<system>/versions`: `{"modules":[{"versions":[{"version":"1.0.0"}]}]}`
//   (the first element of `modules` is the module asked for), 404 when there is no such module. The
//   client picks the newest version its constraint allows.
// - `GET <base><namespace>/<name>/<system>/<version>/download`: 204 with `X-Terraform-Get: <location>`,
//   or 200 with `{"location": …}`. A location starting with `/`, `./` or `../` is resolved against the
//   download URL; the location is then a module source address fetched by go-getter, whose HTTP getter
//   sends no registry credential (only a .netrc's). OpenTofu 1.12 added a "direct" answer (200 with
//   `use_registry_credentials`) that earlier releases and Terraform do not know, so it is not used here.
// - go-getter takes an HTTP URL whose path ends in `.tar.gz` (or that has `archive=tar.gz`) for an
//   archive: it sends a HEAD (any answer will do), GETs the URL with its query as given, and unpacks it
//   as the module's directory.
// - Names: namespace and name are 1 to 64 ASCII letters, digits, `-` and `_` (neither first nor last),
//   the target system 1 to 64 lower-case letters and digits; the client keeps their case as written.
//
// So a download answers 204 with a URL of this API that needs no header: `…/archive.tar.gz?token=…`,
// the token an HMAC of the version id and an expiry, good for ARCHIVE_TOKEN_TTL_MS, keyed by a key
// derived from PLINTH_SECRET_KEY, which every API process behind a load balancer shares.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { NotFoundError, UnauthenticatedError } from '../platform/errors.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { findArchive, findServedDefinition, findServedVersion, findServedVersions, type RegistryArchiveRow } from './registry.repo.ts';

/** The base URL the discovery document names for `modules.v1`. */
export const MODULES_V1_BASE = '/registry/modules/v1/';

/** Where a version's archive is served, with a download token in `?token=`. */
export const ARCHIVE_ROUTE = '/registry/module-archives/:versionId/archive.tar.gz';

/** How long a download location stays valid: `tofu init` fetches it at once. */
export const ARCHIVE_TOKEN_TTL_MS = 5 * 60_000;

/** The HKDF label of the download tokens' key: no other use of the secret key derives the same bytes. */
const ARCHIVE_KEY_LABEL = 'plinth module registry archive v1';

/** A module address's parts after the host: the namespace is an organization's id. */
export interface RegistryModule {
  namespace: string;
  name: string;
  system: string;
}

/**
 * The definition a namespace serves as `<name>/<system>`: the one of type `<system>/<name>`, the
 * organization's own before a global one. A type of another form has no address, and is not served.
 */
async function servedDefinitionId(db: Db, principal: Principal, m: RegistryModule): Promise<string> {
  const definition = await findServedDefinition(db, principal.organizationId, `${m.system}/${m.name}`);
  if (!definition) throw new NotFoundError('ModuleDefinition', `${m.namespace}/${m.name}/${m.system}`);
  return definition.id;
}

/** listRegistryVersions is every published version of the module, oldest first; deprecated ones too (a configuration pinned to one keeps working). */
export async function listRegistryVersions(db: Db, principal: Principal, m: RegistryModule): Promise<string[]> {
  const versions = await findServedVersions(db, await servedDefinitionId(db, principal, m));
  if (versions.length === 0) throw new NotFoundError('ModuleDefinition', `${m.namespace}/${m.name}/${m.system}`);
  return versions;
}

/** registryDownloadLocation is the X-Terraform-Get of a version: its archive's URL (relative to the host) with a fresh token. */
export async function registryDownloadLocation(
  db: Db,
  secrets: SecretBox,
  principal: Principal,
  m: RegistryModule,
  version: string,
  nowMs = Date.now(),
): Promise<string> {
  const found = await findServedVersion(db, await servedDefinitionId(db, principal, m), version);
  if (!found) throw new NotFoundError('ModuleVersion', `${m.namespace}/${m.name}/${m.system} ${version}`);
  const token = archiveToken(secrets, found.id, nowMs + ARCHIVE_TOKEN_TTL_MS);
  return `${ARCHIVE_ROUTE.replace(':versionId', found.id)}?token=${token}`;
}

function tokenMac(key: Buffer, versionId: string, expiresAtSeconds: string): string {
  return createHmac('sha256', key).update(`${versionId}\n${expiresAtSeconds}`).digest('base64url');
}

/** archiveToken lets whoever holds it download one version's archive until `expiresAtMs`: `<keyId>.<expiry, Unix seconds>.<HMAC>`. */
export function archiveToken(secrets: SecretBox, versionId: string, expiresAtMs: number): string {
  const key = secrets.deriveKey(ARCHIVE_KEY_LABEL)!;
  const expires = String(Math.ceil(expiresAtMs / 1000));
  return `${key.id}.${expires}.${tokenMac(key.bytes, versionId, expires)}`;
}

/**
 * checkArchiveToken throws 401 unless `token` was made for this version, by the current key or a
 * previous one (PLINTH_SECRET_KEY_PREVIOUS), and has not expired. The MAC is compared as text, in
 * constant time: a token is accepted only exactly as it was made.
 */
export function checkArchiveToken(secrets: SecretBox, versionId: string, token: string, nowMs = Date.now()): void {
  const [keyId, expires, mac, ...rest] = token.split('.');
  const key = keyId && mac && !rest.length && /^\d{1,12}$/.test(expires ?? '') ? secrets.deriveKey(ARCHIVE_KEY_LABEL, keyId) : undefined;
  const given = Buffer.from(mac ?? '');
  const expected = Buffer.from(key ? tokenMac(key.bytes, versionId, expires) : '');
  if (!key || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new UnauthenticatedError('INVALID', 'The download token is not valid for this archive');
  }
  if (Number(expires) * 1000 <= nowMs) {
    throw new UnauthenticatedError('EXPIRED', 'The download token has expired: ask the registry for the download location again (run `tofu init` again)');
  }
}

/** readRegistryArchive is a version's archive, for a valid download token. */
export async function readRegistryArchive(db: Db, secrets: SecretBox, versionId: string, token: string, nowMs = Date.now()): Promise<RegistryArchiveRow> {
  checkArchiveToken(secrets, versionId, token, nowMs);
  const row = await findArchive(db, versionId);
  // Its definition was deleted since the token was made.
  if (!row) throw new NotFoundError('ModuleVersion', versionId);
  return row;
}
