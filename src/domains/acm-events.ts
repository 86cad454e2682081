// ACM's EventBridge events about the certificates Plinth requested (docs/domains.md#certificates): each
// moves its certificate on as a check would, without waiting for the next one.

import type { CloudAccountRow } from '../cloud-accounts/cloud-accounts.repo.ts';
import type { Executor } from '../platform/db/db.ts';
import type { DomainConfig } from '../platform/domain-config.ts';
import { applyCertificateState } from './domain-checks.ts';
import { findCertificateByArn, findDomainById, insertDomainEvent, updateCertificate } from './domains.repo.ts';

export interface AcmEvent {
  'detail-type': string;
  source: string;
  resources?: string[];
  detail: Record<string, unknown>;
}

/** ACM's events, by detail-type. */
const KINDS = ['ACM Certificate Available', 'ACM Certificate Approaching Expiration', 'ACM Certificate Expired', 'ACM Certificate Renewal Action Required'];

export function isAcmEvent(event: AcmEvent): boolean {
  return event.source === 'aws.acm' && KINDS.includes(event['detail-type']);
}

/**
 * applyAcmEvent applies an ACM event to the certificate it names, when Plinth requested that certificate
 * in this cloud account; `matched` says whether it did.
 */
export async function applyAcmEvent(
  db: Executor,
  domains: DomainConfig,
  account: CloudAccountRow,
  event: AcmEvent,
): Promise<{ matched: boolean; arn?: string }> {
  const arn = event.resources?.find((r) => r.length <= 2048 && r.startsWith('arn:') && r.includes(':acm:'));
  if (!arn) return { matched: false };
  const certificate = await findCertificateByArn(db, account.id, arn);
  const domain = certificate ? await findDomainById(db, certificate.domain_id) : undefined;
  if (!certificate || !domain || domain.status === 'DETACHED') return { matched: false, arn };
  const expires = typeof event.detail.CertificateExpirationDate === 'string' ? new Date(event.detail.CertificateExpirationDate) : undefined;
  const notAfter = expires && !Number.isNaN(expires.getTime()) && expires.getUTCFullYear() <= 9999 ? expires : undefined;
  const deps = { db, domains };
  switch (event['detail-type']) {
    case 'ACM Certificate Available':
      await applyCertificateState(deps, domain, certificate, 'ISSUED', notAfter);
      break;
    case 'ACM Certificate Approaching Expiration':
      if (!certificate.expiring_reported_at) {
        await insertDomainEvent(db, {
          organizationId: domain.organization_id,
          moduleInstanceId: domain.module_instance_id,
          domainId: domain.id,
          certificateId: certificate.id,
          kind: 'CERTIFICATE_EXPIRING',
          data: {
            hostname: domain.hostname,
            certificateArn: arn,
            ...(typeof event.detail.DaysToExpiry === 'number' ? { daysToExpiry: event.detail.DaysToExpiry } : {}),
          },
        });
        await updateCertificate(db, certificate.id, { expiring_reported_at: new Date() });
      }
      break;
    case 'ACM Certificate Expired':
      await applyCertificateState(deps, domain, certificate, 'EXPIRED', notAfter);
      break;
    default:
      await insertDomainEvent(db, {
        organizationId: domain.organization_id,
        moduleInstanceId: domain.module_instance_id,
        domainId: domain.id,
        certificateId: certificate.id,
        kind: 'CERTIFICATE_RENEWAL_ACTION_REQUIRED',
        data: {
          hostname: domain.hostname,
          certificateArn: arn,
          ...(typeof event.detail.RenewalStatusReason === 'string' ? { reason: event.detail.RenewalStatusReason.slice(0, 200) } : {}),
        },
      });
  }
  return { matched: true, arn };
}
