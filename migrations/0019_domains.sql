-- Domains of module instances and their certificates (docs/domains.md): a hostname attached to an
-- instance, its ownership verified through a DNS TXT record, then a certificate requested from ACM in
-- the instance's AWS account; every step recorded as a domain event.

create table domains (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  module_instance_id text not null references module_instances (id) on delete cascade,
  cloud_account_id text references cloud_accounts (id) on delete set null,
  hostname text not null,
  region text not null,
  status text not null check (status in ('PENDING_VERIFICATION', 'VERIFIED', 'DETACHED')),
  verification_token text not null,
  verified_at timestamptz,
  -- When worker processes next look at it (its DNS record, then its certificate); null: nothing to do.
  next_check_at timestamptz,
  check_attempts integer not null default 0,
  last_check_message text,
  detached_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- One live domain per hostname in an organization; a detached one keeps its events.
create unique index domains_live_hostname_idx on domains (organization_id, hostname) where status <> 'DETACHED';
create index domains_instance_idx on domains (module_instance_id, id);
create index domains_org_idx on domains (organization_id, id);
create index domains_due_idx on domains (next_check_at) where next_check_at is not null;

create table certificate_issuances (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  domain_id text not null references domains (id) on delete cascade,
  cloud_account_id text references cloud_accounts (id) on delete set null,
  region text not null,
  certificate_arn text,
  status text not null check (status in ('REQUESTING', 'PENDING_VALIDATION', 'ISSUED', 'FAILED', 'EXPIRED')),
  validation_records jsonb,
  not_after timestamptz,
  expiring_reported_at timestamptz,
  next_check_at timestamptz,
  check_attempts integer not null default 0,
  error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index certificate_issuances_arn_idx on certificate_issuances (cloud_account_id, certificate_arn) where certificate_arn is not null;
create index certificate_issuances_domain_idx on certificate_issuances (domain_id, id);
create index certificate_issuances_due_idx on certificate_issuances (next_check_at) where next_check_at is not null;

create table domain_events (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  module_instance_id text not null references module_instances (id) on delete cascade,
  domain_id text references domains (id) on delete cascade,
  certificate_issuance_id text references certificate_issuances (id) on delete cascade,
  kind text not null check (
    kind in (
      'DOMAIN_ATTACHED', 'DNS_VERIFICATION_PENDING', 'DNS_VERIFIED', 'CERTIFICATE_REQUESTED', 'CERTIFICATE_ISSUED',
      'CERTIFICATE_EXPIRING', 'CERTIFICATE_EXPIRED', 'CERTIFICATE_RENEWAL_ACTION_REQUIRED', 'CERTIFICATE_FAILED', 'DOMAIN_DETACHED'
    )
  ),
  data text not null,
  created_at timestamptz not null default now()
);
create index domain_events_instance_idx on domain_events (module_instance_id, id);
