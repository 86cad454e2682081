import { sql } from 'kysely';
import { claimDue } from '../platform/db/claim-due.ts';
import type { DueCheck } from '../platform/due-poller.ts';
import { checkCertificate, checkDomain, type DomainDeps } from './domain-checks.ts';
import type { CertificateRow, DomainRow } from './domains.repo.ts';

/** How long a claimed check is this worker's: should it die meanwhile, another takes it up then. */
const LEASE_SECONDS = 300;

/** The due work of domains: their TXT records to look for, their certificates to follow. */
export function domainChecks(deps: DomainDeps): DueCheck[] {
  return [
    {
      name: 'domain',
      claim: (db) => claimDue<DomainRow>(db, ['domains', 'next_check_at'], LEASE_SECONDS, sql<boolean>`status = 'PENDING_VERIFICATION'`),
      run: (domain: DomainRow) => checkDomain(deps, domain),
    },
    {
      name: 'certificate',
      claim: (db) => claimDue<CertificateRow>(db, ['certificate_issuances', 'next_check_at'], LEASE_SECONDS),
      run: (certificate: CertificateRow) => checkCertificate(deps, certificate),
    },
  ];
}
