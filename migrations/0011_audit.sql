-- Operability (docs/operations.md): what the metrics sample cheaply, and the audit log.

-- The metrics' queue sampler counts unfinished runs and waiting approvals every 15 s: through these
-- partial indexes it reads only the rows it counts, however many finished ones there are.
create index pipeline_runs_active_status_idx on pipeline_runs (status) where status in ('QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL');
create index step_executions_waiting_approval_idx on step_executions (status) where status = 'WAITING_FOR_APPROVAL';

-- The audit log: append-only, one row per audited request, written in the same transaction as the
-- change it records (docs/operations.md#audit-log). Rows of one organization form a hash chain: each
-- row's hash covers its content and the previous row's hash, so an edited or removed row shows.
-- Monthly range partitions on created_at: retention drops whole months instead of deleting rows.
-- No foreign keys: an audit row outlives what it names, and a key-share lock on the organization row
-- taken at commit could deadlock with a transaction that holds it for update.
create table audit_events (
  id text not null,
  organization_id text not null,
  seq bigint not null,
  created_at timestamptz not null,
  actor_type text not null check (actor_type in ('MEMBERSHIP', 'SERVICE_ACCOUNT')),
  actor_id text not null,
  api_key_id text,
  action text not null,
  resource_type text not null,
  resource_id text,
  outcome text not null check (outcome in ('SUCCESS', 'FAILURE', 'DENIED')),
  status_code integer,
  error_code text,
  request_id text not null,
  ip text,
  user_agent text,
  diff jsonb,
  prev_hash text not null,
  hash text not null,
  primary key (id, created_at)
) partition by range (created_at);
create index audit_events_org_seq_idx on audit_events (organization_id, seq);

-- The head of each organization's chain: its row lock serializes the appends of one organization (held
-- only from the audit insert to the commit), and its hash is the anchor that shows a removed newest row.
create table audit_chain_heads (
  organization_id text primary key,
  seq bigint not null,
  hash text not null
);

-- Rows are never changed; retention removes them only with plinth.audit_retention set for its transaction.
create function audit_events_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' and current_setting('plinth.audit_retention', true) = 'on' then
    return old;
  end if;
  raise exception 'audit_events is append-only' using errcode = 'insufficient_privilege';
end $$;
create trigger audit_events_append_only before update or delete on audit_events
  for each row execute function audit_events_append_only();

-- Creates the monthly partitions from this month to `months_ahead` months on; run at migration, at
-- every start and by the daily maintenance, so an insert always finds its month.
create function audit_ensure_partitions(months_ahead integer) returns void language plpgsql as $$
declare
  month date;
begin
  for i in 0..months_ahead loop
    month := (date_trunc('month', now() at time zone 'utc') + make_interval(months => i))::date;
    execute format('create table if not exists %I partition of audit_events for values from (%L) to (%L)',
      'audit_events_' || to_char(month, 'YYYY_MM'), month::timestamp at time zone 'utc', (month + interval '1 month')::timestamp at time zone 'utc');
  end loop;
end $$;
select audit_ensure_partitions(2);

-- Per organization: how long its audit rows are kept, and where they are delivered.
create table audit_settings (
  organization_id text primary key references organizations (id) on delete cascade,
  retention_days integer not null default 365 check (retention_days between 1 and 3650),
  webhook_url text,
  -- Sealed with the secret box (context audit_settings.webhook_secret:<organization_id>).
  webhook_secret text,
  -- Delivery: every row up to delivered_seq was accepted by the webhook; the next try is due at next_attempt_at.
  delivered_seq bigint not null default 0,
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The delivery log: one row per attempt to deliver a batch of audit rows to a webhook.
create table audit_webhook_deliveries (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  from_seq bigint not null,
  to_seq bigint not null,
  attempt integer not null,
  status_code integer,
  error text,
  delivered boolean not null,
  created_at timestamptz not null default now()
);
create index audit_webhook_deliveries_org_idx on audit_webhook_deliveries (organization_id, id);
