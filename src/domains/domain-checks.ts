// The steps of a domain after it is attached (docs/domains.md#lifecycle): its TXT record looked up until
// it is there, then a certificate requested from ACM in the cloud account, followed until it is issued,
// and watched until it expires. Each step that changes something is a domain event. Worker processes take
// the steps when they are due (domain-poller.ts); `POST /domains/{id}/verify` takes the first one now.

import type { CloudOutcomeCode } from '../platform/errors.ts';
import { DescribeCertificateCommand, RequestCertificateCommand, type CertificateDetail } from '@aws-sdk/client-acm';
import { findCloudAccountForIngest } from '../cloud-accounts/cloud-accounts.repo.ts';
import { acmClientAs, awsCall } from '../platform/aws/aws-clients.ts';
import type { AwsConfig } from '../platform/aws/aws-config.ts';
import type { Db, Executor } from '../platform/db/db.ts';
import type { DomainConfig } from '../platform/domain-config.ts';
import { AppError } from '../platform/errors.ts';
import { hasTxtRecord } from './dns-check.ts';
import { verificationRecord } from './hostnames.ts';
import { findDomainById, insertCertificate, insertDomainEvent, updateCertificate, updateDomain, type CertificateRow, type DomainRow } from './domains.repo.ts';

export interface DomainDeps {
  db: Db;
  aws: AwsConfig;
  domains: DomainConfig;
}

/** Warned of this long before a certificate expires. */
export const EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;
/** After this many refused requests, a certificate is given up as FAILED. */
const MAX_REQUEST_ATTEMPTS = 8;
const HOUR_MS = 3600 * 1000;

/** The wait before the next look: the interval, doubled with each miss, at most an hour. */
function backoff(config: DomainConfig, attempts: number): Date {
  const base = Math.max(1, config.checkIntervalSeconds) * 1000;
  return new Date(Date.now() + Math.min(HOUR_MS, base * 2 ** Math.min(attempts, 12)));
}

/** checkDomain looks up the domain's TXT record; found, the domain is verified and its certificate requested. */
export async function checkDomain(deps: DomainDeps, domain: DomainRow): Promise<void> {
  const record = verificationRecord(domain.hostname, domain.verification_token);
  const found = await hasTxtRecord(deps.domains.dnsServers, record.recordName, record.recordValue);
  if (!found.found) {
    await updateDomain(deps.db, domain.id, {
      check_attempts: domain.check_attempts + 1,
      next_check_at: backoff(deps.domains, domain.check_attempts + 1),
      last_check_message: found.message,
    });
    return;
  }
  const certificate = await deps.db.transaction().execute(async (trx) => {
    const current = await trx.selectFrom('domains').selectAll().where('id', '=', domain.id).forUpdate().executeTakeFirst();
    if (current?.status !== 'PENDING_VERIFICATION') return undefined;
    await updateDomain(trx, domain.id, {
      status: 'VERIFIED',
      verified_at: new Date(),
      next_check_at: null,
      last_check_message: `${record.recordName} has the record`,
    });
    await insertDomainEvent(trx, {
      organizationId: domain.organization_id,
      moduleInstanceId: domain.module_instance_id,
      domainId: domain.id,
      kind: 'DNS_VERIFIED',
      data: { hostname: domain.hostname, recordName: record.recordName },
    });
    return insertCertificate(trx, {
      organizationId: domain.organization_id,
      domainId: domain.id,
      cloudAccountId: domain.cloud_account_id,
      region: domain.region,
    });
  });
  if (certificate) await checkCertificate(deps, certificate);
}

/** checkCertificate takes the next step of a certificate: request it, follow its validation, watch its expiry. */
export async function checkCertificate(deps: DomainDeps, certificate: CertificateRow): Promise<void> {
  const domain = await findDomainById(deps.db, certificate.domain_id);
  if (!domain || domain.status === 'DETACHED') return updateCertificate(deps.db, certificate.id, { next_check_at: null });
  try {
    if (certificate.status === 'REQUESTING') return await request(deps, domain, certificate);
    if (certificate.status === 'PENDING_VALIDATION' || certificate.status === 'ISSUED') return await follow(deps, domain, certificate);
    await updateCertificate(deps.db, certificate.id, { next_check_at: null });
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const attempts = certificate.check_attempts + 1;
    const givenUp = certificate.status === 'REQUESTING' && attempts >= MAX_REQUEST_ATTEMPTS;
    await updateCertificate(deps.db, certificate.id, {
      check_attempts: attempts,
      error: JSON.stringify({ code: error.code, message: error.message }),
      ...(givenUp ? { status: 'FAILED', next_check_at: null } : { next_check_at: backoff(deps.domains, attempts) }),
    });
    if (givenUp) await event(deps.db, domain, certificate, 'CERTIFICATE_FAILED', { message: error.message });
  }
}

function event(
  db: Executor,
  domain: DomainRow,
  certificate: CertificateRow,
  kind: Parameters<typeof insertDomainEvent>[1]['kind'],
  data: Record<string, unknown>,
) {
  return insertDomainEvent(db, {
    organizationId: domain.organization_id,
    moduleInstanceId: domain.module_instance_id,
    domainId: domain.id,
    certificateId: certificate.id,
    kind,
    data: { hostname: domain.hostname, ...(certificate.certificate_arn ? { certificateArn: certificate.certificate_arn } : {}), ...data },
  });
}

async function acmFor(deps: DomainDeps, certificate: CertificateRow) {
  const account = certificate.cloud_account_id ? await findCloudAccountForIngest(deps.db, certificate.cloud_account_id) : undefined;
  if (!account) throw new AppError(422, 'Api:CloudAccount:NOT_FOUND', 'The cloud account of the certificate is gone');
  return acmClientAs(deps.aws, { roleArn: account.role_arn, externalId: account.external_id, sessionName: `plinth-${certificate.id}` }, certificate.region);
}

async function request(deps: DomainDeps, domain: DomainRow, certificate: CertificateRow) {
  const acm = await acmFor(deps, certificate);
  try {
    const requested = await awsCall('ACM RequestCertificate', () =>
      acm.send(new RequestCertificateCommand({ DomainName: domain.hostname, ValidationMethod: 'DNS', IdempotencyToken: certificate.id.slice(0, 32) })),
    );
    const arn = requested.CertificateArn;
    if (!arn) throw new AppError(502, 'Aws:Request:FAILED', 'ACM requested the certificate without naming it');
    const detail = await describe(acm, arn);
    const records = validationRecords(detail);
    await updateCertificate(deps.db, certificate.id, {
      status: 'PENDING_VALIDATION',
      certificate_arn: arn,
      validation_records: JSON.stringify(records),
      check_attempts: 0,
      error: null,
      next_check_at: backoff(deps.domains, 0),
    });
    await event(deps.db, domain, { ...certificate, certificate_arn: arn }, 'CERTIFICATE_REQUESTED', { certificateArn: arn, validationRecords: records });
  } finally {
    acm.destroy();
  }
}

async function describe(acm: Awaited<ReturnType<typeof acmClientAs>>, arn: string): Promise<CertificateDetail> {
  const answer = await awsCall('ACM DescribeCertificate', () => acm.send(new DescribeCertificateCommand({ CertificateArn: arn })));
  return answer.Certificate ?? {};
}

function validationRecords(detail: CertificateDetail) {
  return (detail.DomainValidationOptions ?? []).flatMap((o) =>
    o.ResourceRecord?.Name && o.ResourceRecord.Value
      ? [{ name: o.ResourceRecord.Name, type: o.ResourceRecord.Type ?? 'CNAME', value: o.ResourceRecord.Value }]
      : [],
  );
}

/** follow reads the certificate's state from ACM: issued, failed, renewed, expiring or expired. */
async function follow(deps: DomainDeps, domain: DomainRow, certificate: CertificateRow) {
  const acm = await acmFor(deps, certificate);
  try {
    const detail = await describe(acm, certificate.certificate_arn!);
    await applyCertificateState(deps, domain, certificate, detail.Status ?? 'PENDING_VALIDATION', detail.NotAfter, detail.FailureReason);
  } finally {
    acm.destroy();
  }
}

/** applyCertificateState moves a certificate to what ACM says of it, with the events of each change. */
export async function applyCertificateState(
  deps: { db: Executor; domains: DomainConfig },
  domain: DomainRow,
  certificate: CertificateRow,
  status: string,
  notAfter: Date | undefined,
  reason?: string,
) {
  const now = Date.now();
  if (status === 'ISSUED') {
    const expires = notAfter ?? certificate.not_after ?? undefined;
    if (certificate.status !== 'ISSUED') await event(deps.db, domain, certificate, 'CERTIFICATE_ISSUED', expires ? { notAfter: expires.toISOString() } : {});
    const renewed = expires && certificate.not_after && expires.getTime() > certificate.not_after.getTime();
    const expiring = expires !== undefined && expires.getTime() - now <= EXPIRY_WARNING_MS && expires.getTime() > now;
    const warn = expiring && (!certificate.expiring_reported_at || renewed);
    if (warn) await event(deps.db, domain, certificate, 'CERTIFICATE_EXPIRING', { notAfter: expires!.toISOString() });
    if (expires && expires.getTime() <= now) return expire(deps.db, domain, certificate);
    await updateCertificate(deps.db, certificate.id, {
      status: 'ISSUED',
      not_after: expires ?? null,
      check_attempts: 0,
      error: null,
      ...(warn ? { expiring_reported_at: new Date() } : renewed ? { expiring_reported_at: null } : {}),
      // Looked at again when the warning is due, then when it expires (ACM may renew it meanwhile).
      next_check_at: expires
        ? new Date(expiring ? expires.getTime() : Math.max(now + HOUR_MS, expires.getTime() - EXPIRY_WARNING_MS))
        : backoff(deps.domains, 0),
    });
    return;
  }
  if (status === 'EXPIRED') return expire(deps.db, domain, certificate);
  if (['FAILED', 'VALIDATION_TIMED_OUT', 'REVOKED', 'INACTIVE'].includes(status)) {
    if (certificate.status === 'FAILED') return;
    await updateCertificate(deps.db, certificate.id, {
      status: 'FAILED',
      next_check_at: null,
      error: JSON.stringify({ code: 'Aws:Certificate:FAILED' satisfies CloudOutcomeCode, message: `ACM says ${status}${reason ? `: ${reason}` : ''}` }),
    });
    await event(deps.db, domain, certificate, 'CERTIFICATE_FAILED', { status, ...(reason ? { reason } : {}) });
    return;
  }
  // Still waiting for its validation records: looked at again later.
  await updateCertificate(deps.db, certificate.id, {
    check_attempts: certificate.check_attempts + 1,
    next_check_at: backoff(deps.domains, certificate.check_attempts + 1),
  });
}

async function expire(db: Executor, domain: DomainRow, certificate: CertificateRow) {
  if (certificate.status === 'EXPIRED') return;
  await updateCertificate(db, certificate.id, { status: 'EXPIRED', next_check_at: null });
  await event(db, domain, certificate, 'CERTIFICATE_EXPIRED', certificate.not_after ? { notAfter: certificate.not_after.toISOString() } : {});
}
