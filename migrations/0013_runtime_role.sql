-- The service connects as a runtime role that may only append to the audit log (src/platform/db/roles.ts
-- grants it). Partitions and retention, which create, delete and drop, run as these functions, with the
-- rights of the role that owns them (the one that migrates). They take numbers only, each bounded. Their
-- search path puts pg_catalog first, so they name every table with its schema (one made unqualified
-- would land in pg_catalog).

create or replace function audit_ensure_partitions(months_ahead integer) returns void language plpgsql
  security definer set search_path = pg_catalog, public as $$
declare
  month date;
begin
  if months_ahead is null or months_ahead not between 0 and 24 then
    raise exception 'months_ahead must be between 0 and 24' using errcode = 'invalid_parameter_value';
  end if;
  for i in 0..months_ahead loop
    month := (date_trunc('month', now() at time zone 'utc') + make_interval(months => i))::date;
    execute format('create table if not exists public.%I partition of public.audit_events for values from (%L) to (%L)',
      'audit_events_' || to_char(month, 'YYYY_MM'), month::timestamp at time zone 'utc', (month + interval '1 month')::timestamp at time zone 'utc');
  end loop;
end $$;

-- Retention: rows older than their organization's retention (`default_days` without settings) are
-- deleted, oldest first within the months still kept; a month whose end lies past every organization's
-- retention goes whole, with its partition.
create function audit_apply_retention(default_days integer) returns table (dropped text[], deleted bigint) language plpgsql
  security definer set search_path = pg_catalog, public as $$
declare
  keep_days integer;
  part record;
begin
  if default_days is null or default_days not between 1 and 3650 then
    raise exception 'default_days must be between 1 and 3650' using errcode = 'invalid_parameter_value';
  end if;
  select greatest(default_days, coalesce(max(s.retention_days), 0)) into keep_days from public.audit_settings s;
  perform set_config('plinth.audit_retention', 'on', true);
  delete from public.audit_events e
   where e.created_at < now() - make_interval(days => coalesce((select s.retention_days from public.audit_settings s where s.organization_id = e.organization_id), default_days))
     and e.created_at >= now() - make_interval(days => keep_days);
  get diagnostics deleted = row_count;
  perform set_config('plinth.audit_retention', 'off', true);
  dropped := '{}';
  for part in
    select c.relname as name, (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz as upper
      from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'public.audit_events'::regclass
  loop
    if part.name ~ '^audit_events_\d{4}_\d{2}$' and part.upper <= now() - make_interval(days => keep_days) then
      execute format('drop table public.%I', part.name);
      dropped := dropped || part.name::text;
    end if;
  end loop;
  return next;
end $$;

revoke execute on function audit_ensure_partitions(integer) from public;
revoke execute on function audit_apply_retention(integer) from public;
