-- The audit chain's anchor, and a retention that says what it deleted (docs/operations.md#audit-log).
--
-- A hash chain shows an edited row or a gap, but not a removed start or end: what is left of it still
-- links up. So each chain head also keeps `mac`, an HMAC of the organization, seq and hash of the
-- newest row, keyed by a key derived from PLINTH_SECRET_KEY: the database never sees that key, so no
-- role of it can move the anchor onto a chain cut short. The API writes it with every append.
alter table audit_chain_heads add column mac text;

-- Heads written before this migration have none. While this table holds its row, every start anchors
-- the heads without an anchor, as they are, and deletes the row in the same transaction (as the owner:
-- the runtime role may not touch it). So a start that dies before anchoring leaves the work to the
-- next one; once the row is gone, a head without an anchor is never anchored (a head the runtime role
-- rewrote, anchor cleared, would be vouched for). A database with no chain yet needs no anchoring, nor
-- the key.
create table audit_anchor_pending (pending boolean primary key default true check (pending));
insert into audit_anchor_pending (pending) select true where exists (select 1 from audit_chain_heads);

-- Retention writes a row of its own into each chain it shortens, as the platform (no principal).
-- A chain starts at 1: a row below it (the runtime role may insert rows) would sit before every walk.
-- Both are added unchecked (NOT VALID: new rows are checked, old ones not yet), since checking the rows
-- here would scan the whole log with every append held off until the migrations commit. Every start
-- validates them afterwards, under a lock that lets appends and reads go on.
alter table audit_events drop constraint audit_events_actor_type_check;
alter table audit_events add constraint audit_events_actor_type_check check (actor_type in ('MEMBERSHIP', 'SERVICE_ACCOUNT', 'SYSTEM')) not valid;
alter table audit_events add constraint audit_events_seq_check check (seq >= 1) not valid;

-- Retention reads an organization's newest retention row: through this index, without reading the
-- chain back to it.
create index audit_events_retention_idx on audit_events (organization_id, seq) where action = 'audit.retention';

-- Retention, per organization: every row up to the last one created before the first day of the month
-- its retention reaches into (whole months past its horizon), so that what stays is the chain's suffix.
-- Rows go by seq, not by time: two appends may take their seq in the other order than their clocks.
-- A month past every organization's retention (365 days without settings, as the API's default) goes
-- whole, with its partition. A chain whose start does not link (seq 1 with no previous hash, or the
-- row after the one its newest retention row deleted last) or has a gap among the rows to delete was cut
-- by something else than retention: it is left alone, with any partition holding its rows, so that
-- verification keeps showing it. Only a retention row the anchored head covers, that deleted rows before
-- itself and shares its seq with no other row can vouch for a start: the runtime role may insert rows,
-- and one it made up (deleted up to where a chain was cut by hand) must not let retention delete the
-- evidence.
--
-- Each chain it shortens gets its `audit.retention` row here, hashed onto the head as the API hashes a
-- row (src/platform/audit/chain.ts), so that a call outside the maintenance leaves its record too. The
-- head's anchor cannot follow (the database has no key): the maintenance re-anchors it in the same
-- transaction when the anchor held for the head before; after any other call it stays behind, and
-- verification reports the chain. The function returns, per organization shortened, what it deleted,
-- and the seq and previous hash of the row it wrote.
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
  head record;
  boundary record;
  has_boundary boolean;
  intact boolean;
  deletions jsonb := '[]';
  recorded jsonb := '[]';
  deletion jsonb;
  row_id text;
  row_seq bigint;
  row_created timestamptz;
  request_id text;
  diff_text text;
  row_hash text;
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
    select h.seq into head from public.audit_chain_heads h where h.organization_id = chain.org for update;
    select e.seq, e.prev_hash into first_row from public.audit_events e where e.organization_id = chain.org order by e.seq limit 1;
    select count(*) as n, min(e.created_at) as created_at into counted from public.audit_events e
     where e.organization_id = chain.org and e.seq <= last_row.seq;
    select r.id, r.seq, case when r.diff ->> 'toSeq' ~ '^[0-9]{1,18}$' then (r.diff ->> 'toSeq')::bigint end as to_seq,
           r.diff ->> 'lastHash' as last_hash into boundary from public.audit_events r
     where r.organization_id = chain.org and r.action = 'audit.retention' and r.actor_type = 'SYSTEM' and r.seq <= head.seq
     order by r.seq desc limit 1;
    has_boundary := found;
    intact := counted.n = last_row.seq - first_row.seq + 1 and case
      when has_boundary then boundary.seq > boundary.to_seq and first_row.seq = boundary.to_seq + 1 and first_row.prev_hash = boundary.last_hash
        and not exists (select 1 from public.audit_events e where e.organization_id = chain.org and e.seq = boundary.seq and e.id <> boundary.id)
      else first_row.seq = 1 and first_row.prev_hash = '' end;
    if coalesce(intact, false) then
      -- Times as the API writes them (toISOString), since the row's hash covers them as text.
      deletions := deletions || jsonb_build_object('organizationId', chain.org, 'retentionDays', chain.days,
        'before', to_char(cutoff at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'fromSeq', first_row.seq, 'toSeq', last_row.seq, 'count', counted.n,
        'fromCreatedAt', to_char(counted.created_at at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'toCreatedAt', to_char(last_row.created_at at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'lastHash', last_row.hash);
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
  -- Each shortened chain's record, hashed as chainHash hashes a row: SHA-256 of the previous hash, a
  -- newline, and the row's fields as canonical JSON (object keys sorted), seq between id and the rest.
  -- Its ids are UUIDv7 in hex, as newId() makes them; its time is cut to milliseconds, as the API's are.
  row_created := date_trunc('milliseconds', now());
  for deletion in select value from jsonb_array_elements(deletions) loop
    select h.seq, h.hash into head from public.audit_chain_heads h where h.organization_id = deletion ->> 'organizationId';
    row_seq := head.seq + 1;
    row_id := overlay(overlay(replace(gen_random_uuid()::text, '-', '')
      placing lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') from 1 for 12) placing '7' from 13 for 1);
    request_id := overlay(overlay(replace(gen_random_uuid()::text, '-', '')
      placing lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') from 1 for 12) placing '7' from 13 for 1);
    diff_text := format('{"before":%s,"count":%s,"fromCreatedAt":%s,"fromSeq":%s,"lastHash":%s,"retentionDays":%s,"toCreatedAt":%s,"toSeq":%s}',
      to_json(deletion ->> 'before'), deletion ->> 'count', to_json(deletion ->> 'fromCreatedAt'), deletion ->> 'fromSeq',
      to_json(deletion ->> 'lastHash'), deletion ->> 'retentionDays', to_json(deletion ->> 'toCreatedAt'), deletion ->> 'toSeq');
    row_hash := encode(sha256(convert_to(head.hash || E'\n'
      || format('[%s,%s,', to_json(row_id), to_json(deletion ->> 'organizationId')) || row_seq::text
      || format(',%s,"SYSTEM","retention",null,"audit.retention","audit-event",null,"SUCCESS",null,null,%s,null,null,%s]',
           to_json(to_char(row_created at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')), to_json(request_id), diff_text),
      'UTF8')), 'hex');
    insert into public.audit_events (id, organization_id, seq, created_at, actor_type, actor_id, api_key_id, action, resource_type, resource_id,
                                     outcome, status_code, error_code, request_id, ip, user_agent, diff, prev_hash, hash)
    values (row_id, deletion ->> 'organizationId', row_seq, row_created, 'SYSTEM', 'retention', null, 'audit.retention', 'audit-event', null,
            'SUCCESS', null, null, request_id, null, null, diff_text::jsonb, head.hash, row_hash);
    update public.audit_chain_heads set seq = row_seq, hash = row_hash where organization_id = deletion ->> 'organizationId';
    recorded := recorded || (deletion || jsonb_build_object('recordSeq', row_seq, 'recordPrevHash', head.hash));
  end loop;
  return jsonb_build_object('dropped', to_jsonb(dropped), 'deletions', recorded, 'leftAlone', to_jsonb(left_alone));
end $$;

revoke execute on function audit_apply_retention() from public;
