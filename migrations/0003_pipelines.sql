-- Pipelines and their immutable, integer-numbered versions.
create table pipelines (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  project_id text references projects (id),
  given_id text,
  name text not null,
  description text,
  -- The number of the newest version. POST /pipeline-versions locks this row to compute the next
  -- number, so concurrent creations are serialized and never collide.
  latest_version integer not null default 1,
  created_by_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, given_id)
);
create index pipelines_org_id_idx on pipelines (organization_id, id);
create index pipelines_org_project_idx on pipelines (organization_id, project_id, id);

create table pipeline_versions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  pipeline_id text not null references pipelines (id) on delete cascade,
  version integer not null,
  config jsonb not null,
  created_by_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (pipeline_id, version)
);
create index pipeline_versions_org_id_idx on pipeline_versions (organization_id, id);
create index pipeline_versions_pipeline_id_idx on pipeline_versions (pipeline_id, id);
