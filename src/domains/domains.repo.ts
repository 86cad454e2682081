import { sql, type Selectable } from 'kysely';
import type { CertificateIssuancesTable, DomainEventsTable, DomainsTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { CertificateStatus, DomainEventKind } from '../platform/db/enums.ts';
import { newId } from '../platform/ids.ts';
import { keyset, type PageRequest } from '../platform/pagination.ts';
import type { CertificateIssuance, Domain, DomainEvent } from './domains.schema.ts';
import { verificationRecord } from './hostnames.ts';

export type DomainRow = Selectable<DomainsTable>;
export type CertificateRow = Selectable<CertificateIssuancesTable>;

export function rowToCertificate(row: CertificateRow): CertificateIssuance {
  return {
    id: row.id,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.certificate_arn ? { certificateArn: row.certificate_arn } : {}),
    ...(row.validation_records ? { validationRecords: row.validation_records as never } : {}),
    ...(row.not_after ? { notAfter: row.not_after } : {}),
    ...(row.error ? { error: row.error } : {}),
  };
}

export function rowToDomain(row: DomainRow, certificate: CertificateRow | undefined): Domain {
  return {
    id: row.id,
    organizationId: row.organization_id,
    moduleInstanceId: row.module_instance_id,
    hostname: row.hostname,
    region: row.region,
    status: row.status,
    verification: verificationRecord(row.hostname, row.verification_token),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.cloud_account_id ? { cloudAccountId: row.cloud_account_id } : {}),
    ...(row.verified_at ? { verifiedAt: row.verified_at } : {}),
    ...(row.last_check_message ? { lastCheckMessage: row.last_check_message } : {}),
    ...(certificate ? { certificate: rowToCertificate(certificate) } : {}),
  };
}

export function insertDomain(
  db: Executor,
  v: { id: string; organizationId: string; moduleInstanceId: string; cloudAccountId: string; hostname: string; region: string; token: string },
) {
  return db
    .insertInto('domains')
    .values({
      id: v.id,
      organization_id: v.organizationId,
      module_instance_id: v.moduleInstanceId,
      cloud_account_id: v.cloudAccountId,
      hostname: v.hostname,
      region: v.region,
      status: 'PENDING_VERIFICATION',
      verification_token: v.token,
      next_check_at: sql<Date>`now()`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A live (not detached) domain of the organization. */
export function findDomain(db: Executor, organizationId: string, id: string, lock = false) {
  return db
    .selectFrom('domains')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '!=', 'DETACHED')
    .$if(lock, (q) => q.forUpdate())
    .executeTakeFirst();
}

export function findDomainsPage(db: Executor, organizationId: string, page: PageRequest, moduleInstanceId: string | undefined) {
  return db
    .selectFrom('domains')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('status', '!=', 'DETACHED')
    .$if(moduleInstanceId !== undefined, (q) => q.where('module_instance_id', '=', moduleInstanceId!))
    .$call(keyset(page, 'domains.id'))
    .execute();
}

/** The newest certificate issuance of each domain. */
export async function findCertificatesOf(db: Executor, domainIds: string[]): Promise<Map<string, CertificateRow>> {
  if (domainIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('certificate_issuances')
    .selectAll()
    .where('domain_id', 'in', domainIds)
    .orderBy('domain_id')
    .orderBy('id', 'desc')
    .distinctOn('domain_id')
    .execute();
  return new Map(rows.map((r) => [r.domain_id, r]));
}

export async function updateDomain(
  db: Executor,
  id: string,
  changes: Partial<Pick<DomainRow, 'status' | 'verified_at' | 'next_check_at' | 'check_attempts' | 'last_check_message' | 'detached_at'>>,
) {
  await db
    .updateTable('domains')
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}

export function insertCertificate(db: Executor, v: { organizationId: string; domainId: string; cloudAccountId: string | null; region: string }) {
  return db
    .insertInto('certificate_issuances')
    .values({
      id: newId(),
      organization_id: v.organizationId,
      domain_id: v.domainId,
      cloud_account_id: v.cloudAccountId,
      region: v.region,
      status: 'REQUESTING',
      next_check_at: sql<Date>`now()`,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateCertificate(
  db: Executor,
  id: string,
  changes: {
    status?: CertificateStatus;
    certificate_arn?: string;
    validation_records?: string;
    not_after?: Date | null;
    expiring_reported_at?: Date | null;
    next_check_at?: Date | null;
    check_attempts?: number;
    error?: string | null;
  },
) {
  await db
    .updateTable('certificate_issuances')
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}

export function findCertificateByArn(db: Executor, cloudAccountId: string, certificateArn: string) {
  return db
    .selectFrom('certificate_issuances')
    .selectAll()
    .where('cloud_account_id', '=', cloudAccountId)
    .where('certificate_arn', '=', certificateArn)
    .forUpdate()
    .executeTakeFirst();
}

export function findDomainById(db: Executor, id: string) {
  return db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertDomainEvent(
  db: Executor,
  v: { organizationId: string; moduleInstanceId: string; domainId: string; certificateId?: string; kind: DomainEventKind; data: Record<string, unknown> },
) {
  await db
    .insertInto('domain_events')
    .values({
      id: newId(),
      organization_id: v.organizationId,
      module_instance_id: v.moduleInstanceId,
      domain_id: v.domainId,
      certificate_issuance_id: v.certificateId ?? null,
      kind: v.kind,
      data: JSON.stringify(v.data),
    })
    .execute();
}

/** The `limit` most recent events of the instance, oldest first. */
export async function findRecentDomainEvents(db: Executor, organizationId: string, moduleInstanceId: string, limit: number): Promise<DomainEvent[]> {
  const rows = await db
    .selectFrom('domain_events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('module_instance_id', '=', moduleInstanceId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse().map(rowToDomainEvent);
}

export async function findDomainEvent(db: Executor, organizationId: string, id: string): Promise<DomainEvent | undefined> {
  const row = await db.selectFrom('domain_events').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return row && rowToDomainEvent(row);
}

function rowToDomainEvent(r: Selectable<DomainEventsTable>): DomainEvent {
  return {
    id: r.id,
    kind: r.kind,
    createdAt: r.created_at,
    data: r.data,
    ...(r.domain_id ? { domainId: r.domain_id } : {}),
    ...(r.certificate_issuance_id ? { certificateIssuanceId: r.certificate_issuance_id } : {}),
  };
}
