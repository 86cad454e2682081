-- The live feed of deployments, their resources and domain events (GET /events/stream): a row for
-- each change, written by triggers in the transaction that made the change, so that whatever commits
-- is in the feed and whatever rolls back is not, whichever code path wrote it.
--
-- `xid` (the writing transaction's id) orders the feed, not `seq` alone: identities are handed out
-- before commit, so a row with a lower seq can become visible after a higher one. A reader takes only
-- rows of transactions older than every transaction still running (pg_snapshot_xmin): those rows are
-- final, and (xid, seq) past the last one sent is a cursor that never skips one.
create table feed_entries (
  xid xid8 not null default pg_current_xact_id(),
  seq bigint generated always as identity,
  organization_id text not null,
  environment_id text,
  module_instance_id text,
  kind text not null check (kind in ('DEPLOYMENT', 'DEPLOYMENT_RESOURCE', 'DOMAIN_EVENT')),
  record_id text not null,
  created_at timestamptz not null default now(),
  primary key (xid, seq)
);
create index feed_entries_org_idx on feed_entries (organization_id, xid, seq);
create index feed_entries_instance_idx on feed_entries (organization_id, module_instance_id, xid, seq);
create index feed_entries_environment_idx on feed_entries (organization_id, environment_id, xid, seq);
create index feed_entries_created_idx on feed_entries (created_at);

create function plinth_feed_deployment() returns trigger language plpgsql set search_path = pg_catalog, public as $$
begin
  insert into feed_entries (organization_id, environment_id, module_instance_id, kind, record_id)
  values (new.organization_id, new.environment_id, new.module_instance_id, 'DEPLOYMENT', new.id);
  return null;
end;
$$;

create function plinth_feed_deployment_resource() returns trigger language plpgsql set search_path = pg_catalog, public as $$
begin
  insert into feed_entries (organization_id, environment_id, module_instance_id, kind, record_id)
  select new.organization_id, d.environment_id, new.module_instance_id, 'DEPLOYMENT_RESOURCE', new.id
  from deployments d where d.id = new.deployment_id;
  return null;
end;
$$;

create function plinth_feed_domain_event() returns trigger language plpgsql set search_path = pg_catalog, public as $$
begin
  insert into feed_entries (organization_id, environment_id, module_instance_id, kind, record_id)
  select new.organization_id, i.environment_id, new.module_instance_id, 'DOMAIN_EVENT', new.id
  from module_instances i where i.id = new.module_instance_id;
  return null;
end;
$$;

-- Only changes a reader can see: a worker's claim on a deployment (definition_check_at) is not one.
create trigger deployments_feed_insert after insert on deployments
  for each row execute function plinth_feed_deployment();
create trigger deployments_feed_update after update on deployments
  for each row
  when ((old.status, old.data, old.error, old.external_deployment_id, old.started_at, old.completed_at)
    is distinct from (new.status, new.data, new.error, new.external_deployment_id, new.started_at, new.completed_at))
  execute function plinth_feed_deployment();

create trigger deployment_resources_feed_insert after insert on deployment_resources
  for each row execute function plinth_feed_deployment_resource();
create trigger deployment_resources_feed_update after update on deployment_resources
  for each row
  when ((old.sequence, old.last_status, old.desired_status, old.data, old.log_streams, old.error, old.stopped_at)
    is distinct from (new.sequence, new.last_status, new.desired_status, new.data, new.log_streams, new.error, new.stopped_at))
  execute function plinth_feed_deployment_resource();

create trigger domain_events_feed_insert after insert on domain_events
  for each row execute function plinth_feed_domain_event();
