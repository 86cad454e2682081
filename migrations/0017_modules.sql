-- The module catalogue (docs/modules.md): typed module definitions, their immutable published versions,
-- and the instances deployed from them into environments, each owning one OpenTofu stack.

-- A definition of an organization, or a global one (organization_id null) that only a super-administrator
-- publishes and every organization reads. DRAFT until a version is published (latest_version_id null).
create table module_definitions (
  id text primary key,
  organization_id text references organizations (id) on delete cascade,
  type text not null,
  name text not null,
  description text not null default '',
  latest_version_id text,
  latest_version text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- One definition per type among an organization's own, one among the global ones.
create unique index module_definitions_type_idx on module_definitions (coalesce(organization_id, ''), type);
create index module_definitions_org_idx on module_definitions (organization_id, id);

-- A published version: its source pinned to a commit, its inputs and outputs, and the archive of the
-- module's directory at that commit (what the module registry serves). Never changed once written,
-- except for its deprecation.
create table module_versions (
  id text primary key,
  module_definition_id text not null references module_definitions (id) on delete cascade,
  organization_id text references organizations (id) on delete cascade,
  -- Each version must be newer than the latest (semantic-version precedence), so creation order is
  -- version order and the newest row is the latest.
  version text not null,
  code_source_id text not null references code_sources (id),
  ref text not null,
  commit_sha text not null,
  path text not null,
  inputs jsonb not null,
  outputs jsonb not null,
  changelog text not null default '',
  archive bytea not null,
  archive_sha256 text not null,
  deprecated_at timestamptz,
  deprecation_message text,
  published_by_id text,
  created_at timestamptz not null default now(),
  unique (module_definition_id, version)
);
create index module_versions_definition_idx on module_versions (module_definition_id, id);
create index module_versions_code_source_idx on module_versions (code_source_id);
alter table module_definitions
  add constraint module_definitions_latest_version_fk foreign key (latest_version_id) references module_versions (id) on delete set null;

-- An instance of a module version in an environment. `values` are the inputs as written (reference
-- values included); `applied_*` what the last successful apply of its stack deployed.
create table module_instances (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  project_id text not null references projects (id),
  environment_id text not null references environments (id),
  module_definition_id text not null references module_definitions (id),
  module_version_id text not null references module_versions (id),
  stack_id text not null unique references stacks (id),
  given_id text not null,
  name text not null,
  "values" jsonb not null default '{}',
  applied_version_id text references module_versions (id),
  applied_values jsonb,
  applied_at timestamptz,
  -- Set when a delete started the destroy run; the instance and its stack go once that run succeeds.
  deleting_run_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (environment_id, given_id)
);
create index module_instances_org_idx on module_instances (organization_id, id);
create index module_instances_environment_idx on module_instances (environment_id, id);
create index module_instances_version_idx on module_instances (module_version_id);
create index module_instances_definition_idx on module_instances (module_definition_id);

-- One row per reference value of an instance's inputs: the edges of the module graph. Rewritten with
-- the instance's values. producer_instance_id is null once the producer is gone (kept, and reported).
create table module_references (
  consumer_instance_id text not null references module_instances (id) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  -- The top-level input holding the reference, and the JSON Pointer of the reference within the inputs.
  input_id text not null,
  input_path text not null,
  producer_ref text not null,
  producer_instance_id text references module_instances (id) on delete set null,
  output text not null,
  output_path text not null default '',
  primary key (consumer_instance_id, input_path)
);
create index module_references_producer_idx on module_references (producer_instance_id);
create index module_references_org_idx on module_references (organization_id);

-- The instance that owns a stack: such a stack is changed only through its instance.
alter table stacks add column module_instance_id text;

-- What a module deploy adds to its stack's run: the inputs and version it deploys, and the ones before.
alter table pipeline_runs add column data jsonb;

-- A run may wait for other stacks to be idle before it takes its own (a module deploy waits for the
-- deploys of the instances it consumes): the stacks it waits for, and the one it waits for now.
alter table pipeline_runs add column wait_for_stack_ids text[];
alter table pipeline_runs add column blocking_stack_id text;
create index pipeline_runs_blocking_stack_idx on pipeline_runs (blocking_stack_id) where blocking_stack_id is not null;
