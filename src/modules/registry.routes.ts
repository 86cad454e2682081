import type { App } from '../platform/http/app.ts';
import { errorResponses } from '../platform/http/openapi.ts';
import { NoContent } from '../platform/schema.ts';
import {
  RegistryArchiveParams,
  RegistryArchiveQuery,
  RegistryDiscovery,
  RegistryModuleParams,
  RegistryModuleVersions,
  RegistryVersionParams,
} from './registry.schema.ts';
import { ARCHIVE_ROUTE, listRegistryVersions, MODULES_V1_BASE, readRegistryArchive, registryDownloadLocation } from './registry.service.ts';

/**
 * The module registry OpenTofu installs published module versions from (docs/module-registry.md): the
 * discovery document, then the protocol's versions and download calls, authenticated by an API key
 * that can act in the namespace's organization, then the archive, authenticated by the token its URL carries.
 */
export async function moduleRegistryRoutes(app: App) {
  const tags = ['module registry'];
  const base = MODULES_V1_BASE.replace(/\/$/, '');

  app.get(
    '/.well-known/terraform.json',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'discoverServices',
        summary: "OpenTofu's service discovery: where the module registry protocol (`modules.v1`) is served",
        response: { 200: RegistryDiscovery },
      },
    },
    async () => ({ 'modules.v1': MODULES_V1_BASE }),
  );

  app.get(
    `${base}/:namespace/:name/:system/versions`,
    {
      config: { organizationParam: 'namespace' },
      schema: {
        tags,
        operationId: 'listRegistryModuleVersions',
        summary:
          'List the published versions of a module (`<organization id>/<name>/<system>`, a definition of type `<system>/<name>`), oldest first, deprecated ones included',
        params: RegistryModuleParams,
        response: {
          ...errorResponses({ 404: 'No such module in the namespace, no published version, or a key that cannot act in the namespace' }),
          200: RegistryModuleVersions,
        },
      },
    },
    async (request, reply) => {
      const versions = await listRegistryVersions(app.db, request.principal, request.params);
      reply.header('Cache-Control', 'no-store');
      return { modules: [{ versions: versions.map((version) => ({ version })) }] };
    },
  );

  app.get(
    `${base}/:namespace/:name/:system/:version/download`,
    {
      config: { organizationParam: 'namespace' },
      schema: {
        tags,
        operationId: 'getRegistryModuleDownload',
        summary: "Where to download a module version: 204 with X-Terraform-Get, the archive's URL with a token good for a few minutes",
        params: RegistryVersionParams,
        response: {
          ...errorResponses({ 404: 'No such module or version in the namespace, or a key that cannot act in the namespace' }),
          204: {
            ...NoContent,
            headers: {
              'X-Terraform-Get': {
                type: 'string',
                description: "The archive's URL, relative to the host: `/registry/module-archives/<version id>/archive.tar.gz?token=…`",
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const { version, ...module } = request.params;
      const location = await registryDownloadLocation(app.db, app.secrets, request.principal, module, version);
      return reply.status(204).header('X-Terraform-Get', location).header('Cache-Control', 'no-store').send(null);
    },
  );

  app.get(
    ARCHIVE_ROUTE,
    {
      // The token in the query is the credential: go-getter sends no header (registry.service.ts).
      config: { public: true },
      schema: {
        tags,
        operationId: 'getRegistryModuleArchive',
        summary: "A module version's archive (.tar.gz of the module's directory), at the URL a download location gave",
        params: RegistryArchiveParams,
        querystring: RegistryArchiveQuery,
        response: {
          ...errorResponses({ 401: 'The token is altered, made for another archive, or expired', 404: 'The version was deleted' }),
          200: { description: 'The archive', content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } } },
        },
      },
    },
    async (request, reply) => {
      const archive = await readRegistryArchive(app.db, app.secrets, request.params.versionId, request.query.token);
      return reply
        .header('Content-Type', 'application/gzip')
        .header('Cache-Control', 'no-store')
        .header('ETag', `"${archive.archive_sha256}"`)
        .send(archive.archive);
    },
  );
}
