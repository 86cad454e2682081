-- The audit chain's anchor, and a retention that says what it deleted (docs/operations.md#audit-log).
--
-- A hash chain shows an edited row or a gap, but not a removed start or end: what is left of it still
-- links up. So each chain head also keeps `mac`, an HMAC of the organization, seq and hash of the
-- newest row, keyed by a key derived from PLINTH_SECRET_KEY: the database never sees that key, so no
-- role of it can move the anchor onto a chain cut short. The API writes it with every append.
-- Heads written before this migration have none: the start that applies it anchors them once.
alter table audit_chain_heads add column mac text;

-- Retention writes a row of its own into each chain it shortens, as the platform (no principal).
alter table audit_events drop constraint audit_events_actor_type_check;
alter table audit_events add constraint audit_events_actor_type_check check (actor_type in ('MEMBERSHIP', 'SERVICE_ACCOUNT', 'SYSTEM'));

-- Verification and retention read an organization's newest retention row: through this index, without
-- reading the chain back to it.
create index audit_events_retention_idx on audit_events (organization_id, seq) where action = 'audit.retention';

-- Retention, per organization: every row up to the last one created before the first day of the month
-- its retention reaches into (whole months past its horizon), so that what stays is the chain's suffix.
-- Rows go by seq, not by time: two appends may take their seq in the other order than their clocks.
-- A month past every organization's retention (365 days without settings, as the API's default) goes
-- whole, with its partition. A chain whose start does not link (seq 1 with no previous hash, or the
-- row after the one its newest retention row deleted last) or has a gap among the rows to delete was cut
-- by something else than retention: it is left alone, with any partition holding its rows, so that
-- verification keeps showing it. The function returns, per organization shortened, what it deleted and
-- the last deleted row's seq and hash; the caller appends that as the chain's `audit.retention` row
-- (with the anchor, which only the API can compute) in the same transaction.
drop function audit_apply_retention();
create function audit_apply_retention() returns jsonb language plpgsql
  security definer set search_path = pg_catalog, pg_temp as $$
declare
  default_days constant integer := 365;
  now_utc constant timestamp := now() at time zone 'utc';
  oldest_kept timestamptz;
  chain record;
  cutoff timestamptz;
  last_row record;
  first_row record;
  counted record;
  boundary record;
  has_boundary boolean;
  intact boolean;
  deletions jsonb := '[]';
  left_alone text[] := '{}';
  dropped text[] := '{}';
  part record;
  holds_left_alone boolean;
begin
  -- One run at a time: two would lock the same chains and drop the same partitions. Another worker's
  -- run in progress does this hour's work.
  if not pg_try_advisory_xact_lock(hashtext('plinth.audit_apply_retention')) then
    return jsonb_build_object('dropped', '[]'::jsonb, 'deletions', '[]'::jsonb, 'leftAlone', '[]'::jsonb);
  end if;
  select date_trunc('month', now_utc - make_interval(days => greatest(default_days, coalesce(max(s.retention_days), 0)))) at time zone 'utc'
    into oldest_kept from public.audit_settings s;
  for chain in
    select h.organization_id as org, coalesce(s.retention_days, default_days) as days
      from public.audit_chain_heads h left join public.audit_settings s on s.organization_id = h.organization_id
     order by h.organization_id
  loop
    cutoff := date_trunc('month', now_utc - make_interval(days => chain.days)) at time zone 'utc';
    select e.seq, e.hash, e.created_at into last_row from public.audit_events e
     where e.organization_id = chain.org and e.created_at < cutoff order by e.seq desc limit 1;
    continue when not found;
    -- The head is locked before any partition is dropped, as an append locks it before it inserts: the
    -- other order would deadlock with an append waiting for the partitioned table.
    perform 1 from public.audit_chain_heads h where h.organization_id = chain.org for update;
    select e.seq, e.prev_hash into first_row from public.audit_events e where e.organization_id = chain.org order by e.seq limit 1;
    select count(*) as n, min(e.created_at) as created_at into counted from public.audit_events e
     where e.organization_id = chain.org and e.seq <= last_row.seq;
    select (r.diff ->> 'toSeq')::bigint as to_seq, r.diff ->> 'lastHash' as last_hash into boundary from public.audit_events r
     where r.organization_id = chain.org and r.action = 'audit.retention' and r.actor_type = 'SYSTEM' order by r.seq desc limit 1;
    has_boundary := found;
    intact := counted.n = last_row.seq - first_row.seq + 1 and case
      when has_boundary then first_row.seq = boundary.to_seq + 1 and first_row.prev_hash = boundary.last_hash
      else first_row.seq = 1 and first_row.prev_hash = '' end;
    if intact then
      deletions := deletions || jsonb_build_object('organizationId', chain.org, 'retentionDays', chain.days, 'before', cutoff,
        'fromSeq', first_row.seq, 'toSeq', last_row.seq, 'count', counted.n, 'fromCreatedAt', counted.created_at,
        'toCreatedAt', last_row.created_at, 'lastHash', last_row.hash);
    else
      left_alone := left_alone || chain.org;
    end if;
  end loop;
  -- Dropping a partition waits for every reader of the log (a long export) while appends queue behind
  -- it: past this, the run gives up, rolls back, and the next one tries again.
  perform set_config('lock_timeout', '10s', true);
  for part in
    select c.relname as name, (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz as upper
      from pg_catalog.pg_inherits i join pg_catalog.pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.audit_events'::regclass
  loop
    if part.name ~ '^audit_events_\d{4}_\d{2}$' and part.upper <= oldest_kept then
      execute format('select exists (select 1 from public.%I e where e.organization_id = any($1))', part.name) into holds_left_alone using left_alone;
      if not holds_left_alone then
        execute format('drop table public.%I', part.name);
        dropped := dropped || part.name::text;
      end if;
    end if;
  end loop;
  perform set_config('plinth.audit_retention', 'on', true);
  delete from public.audit_events e using jsonb_to_recordset(deletions) as d("organizationId" text, "toSeq" bigint)
   where e.organization_id = d."organizationId" and e.seq <= d."toSeq";
  perform set_config('plinth.audit_retention', 'off', true);
  return jsonb_build_object('dropped', to_jsonb(dropped), 'deletions', deletions, 'leftAlone', to_jsonb(left_alone));
end $$;

revoke execute on function audit_apply_retention() from public;
