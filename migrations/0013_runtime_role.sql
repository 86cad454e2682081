-- The service connects as a runtime role that may only append to the audit log (src/platform/db/roles.ts
-- grants it). Partitions and retention, which create, delete and drop, run as these functions, with the
-- rights of the role that owns them (the one that migrates). Neither takes anything that widens what
-- it does: the months ahead are bounded, and retention's default is fixed here. Their search path is
-- pg_catalog, then pg_temp last (a temporary table of the caller's can never stand in for a catalog),
-- and they name every other table with its schema.

create or replace function audit_ensure_partitions(months_ahead integer) returns void language plpgsql
  security definer set search_path = pg_catalog, pg_temp as $$
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

-- Retention: rows older than their organization's retention (365 days without settings, as the API's
-- default) are deleted, oldest first within the months still kept; a month whose end lies past every
-- organization's retention goes whole, with its partition.
create function audit_apply_retention() returns table (dropped text[], deleted bigint) language plpgsql
  security definer set search_path = pg_catalog, pg_temp as $$
declare
  default_days constant integer := 365;
  keep_days integer;
  part record;
begin
  select greatest(default_days, coalesce(max(s.retention_days), 0)) into keep_days from public.audit_settings s;
  perform set_config('plinth.audit_retention', 'on', true);
  delete from public.audit_events e
   where e.created_at < now() - make_interval(days => coalesce((select s.retention_days from public.audit_settings s where s.organization_id = e.organization_id), default_days))
     and e.created_at >= now() - make_interval(days => keep_days);
  get diagnostics deleted = row_count;
  perform set_config('plinth.audit_retention', 'off', true);
  dropped := '{}';
  for part in
    select c.relname as name, (regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz as upper
      from pg_catalog.pg_inherits i join pg_catalog.pg_class c on c.oid = i.inhrelid
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
revoke execute on function audit_apply_retention() from public;
