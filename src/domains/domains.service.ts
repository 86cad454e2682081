import { randomBytes } from 'node:crypto';
import { findCloudAccountById } from '../cloud-accounts/cloud-accounts.repo.ts';
import { findInstance } from '../modules/module-instances.repo.ts';
import type { Principal } from '../platform/auth/principal.ts';
import { isUniqueViolation, rethrowAs } from '../platform/db/db-errors.ts';
import type { Db } from '../platform/db/db.ts';
import { ConflictError, NotFoundError, RuleViolationError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import { checkDomain, type DomainDeps } from './domain-checks.ts';
import {
  findCertificatesOf,
  findDomain,
  findDomainsPage,
  findRecentDomainEvents,
  insertDomain,
  insertDomainEvent,
  rowToDomain,
  updateCertificate,
  updateDomain,
  type DomainRow,
} from './domains.repo.ts';
import type { AttachDomain, DomainEventsQuery } from './domains.schema.ts';
import { hostnameProblem, verificationRecord } from './hostnames.ts';

const DEFAULT_EVENTS = 50;
const MAX_EVENTS = 200;

async function withCertificate(db: Db, row: DomainRow) {
  return rowToDomain(row, (await findCertificatesOf(db, [row.id])).get(row.id));
}

/** The region of the instance's ECS service, from the ARN its stack's outputs declare. */
async function regionOfInstance(db: Db, stackId: string): Promise<string | undefined> {
  const stack = await db.selectFrom('stacks').select('output').where('id', '=', stackId).executeTakeFirst();
  const arn = (stack?.output as { ecs_service_arn?: unknown } | null)?.ecs_service_arn;
  return typeof arn === 'string' ? /^arn:aws[a-z-]*:ecs:([a-z0-9-]+):/.exec(arn.slice(0, 200))?.[1] : undefined;
}

/**
 * attachDomain attaches a hostname to a module instance: it waits for its TXT record (named in the
 * answer), and worker processes look for it from now on.
 */
export async function attachDomain(db: Db, principal: Principal, input: AttachDomain) {
  const problem = hostnameProblem(input.hostname);
  if (problem)
    throw new RuleViolationError('Domain', 'INVALID_HOSTNAME', `${input.hostname} is not a hostname a certificate can name`, [`/data/hostname: ${problem}`]);
  const instance = await findInstance(db, principal.organizationId, input.moduleInstanceId);
  if (!instance) throw new NotFoundError('ModuleInstance', input.moduleInstanceId);
  const account = await findCloudAccountById(db, principal.organizationId, input.cloudAccountId);
  if (!account) throw new NotFoundError('CloudAccount', input.cloudAccountId);
  const region = input.region ?? (await regionOfInstance(db, instance.stack_id));
  if (!region) {
    throw new RuleViolationError('Domain', 'REGION_REQUIRED', 'Name the region of the certificate', [
      "/data/region: required, as the instance's stack declares no ecs_service_arn to take it from",
    ]);
  }
  const row = await rethrowAs(
    db.transaction().execute(async (trx) => {
      const domain = await insertDomain(trx, {
        id: newId(),
        organizationId: principal.organizationId,
        moduleInstanceId: instance.id,
        cloudAccountId: account.id,
        hostname: input.hostname,
        region,
        token: randomBytes(16).toString('hex'),
      });
      const event = { organizationId: principal.organizationId, moduleInstanceId: instance.id, domainId: domain.id };
      const record = verificationRecord(domain.hostname, domain.verification_token);
      await insertDomainEvent(trx, { ...event, kind: 'DOMAIN_ATTACHED', data: { hostname: domain.hostname, region } });
      await insertDomainEvent(trx, { ...event, kind: 'DNS_VERIFICATION_PENDING', data: { hostname: domain.hostname, ...record } });
      return domain;
    }),
    isUniqueViolation,
    () => new ConflictError('Domain', 'ALREADY_EXISTS', `${input.hostname} is attached already`),
  );
  return withCertificate(db, row);
}

export async function listDomains(db: Db, principal: Principal, page: PageRequest, moduleInstanceId: string | undefined) {
  const { items, meta } = toPage(await findDomainsPage(db, principal.organizationId, page, moduleInstanceId), page, (r) => r.id);
  const certificates = await findCertificatesOf(
    db,
    items.map((d) => d.id),
  );
  return { items: items.map((d) => rowToDomain(d, certificates.get(d.id))), meta };
}

async function getDomainRow(db: Db, principal: Principal, id: string) {
  const row = await findDomain(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('Domain', id);
  return row;
}

export async function getDomain(db: Db, principal: Principal, id: string) {
  return withCertificate(db, await getDomainRow(db, principal, id));
}

/** verifyDomainNow looks for a pending domain's TXT record at once (and, found, requests its certificate). */
export async function verifyDomainNow(deps: DomainDeps, principal: Principal, id: string) {
  const row = await getDomainRow(deps.db, principal, id);
  if (row.status === 'PENDING_VERIFICATION') await checkDomain(deps, row);
  return getDomain(deps.db, principal, id);
}

/** detachDomain ends the domain; its events stay, and its certificate stays in ACM (a load balancer may use it). */
export async function detachDomain(db: Db, principal: Principal, id: string) {
  await db.transaction().execute(async (trx) => {
    const row = await findDomain(trx, principal.organizationId, id, true);
    if (!row) throw new NotFoundError('Domain', id);
    await updateDomain(trx, row.id, { status: 'DETACHED', detached_at: new Date(), next_check_at: null });
    const certificate = (await findCertificatesOf(trx, [row.id])).get(row.id);
    if (certificate) await updateCertificate(trx, certificate.id, { next_check_at: null });
    await insertDomainEvent(trx, {
      organizationId: row.organization_id,
      moduleInstanceId: row.module_instance_id,
      domainId: row.id,
      ...(certificate ? { certificateId: certificate.id } : {}),
      kind: 'DOMAIN_DETACHED',
      data: { hostname: row.hostname, ...(certificate?.certificate_arn ? { certificateArn: certificate.certificate_arn } : {}) },
    });
  });
}

/** The instance's most recent domain and certificate events, oldest first. */
export async function domainEvents(db: Db, principal: Principal, query: DomainEventsQuery) {
  const instance = await findInstance(db, principal.organizationId, query.moduleInstanceId);
  if (!instance) throw new NotFoundError('ModuleInstance', query.moduleInstanceId);
  return findRecentDomainEvents(db, principal.organizationId, instance.id, Math.min(query.limit ?? DEFAULT_EVENTS, MAX_EVENTS));
}
