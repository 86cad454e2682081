import type { ColumnType, Generated } from 'kysely';

/**
 * The Kysely view of the schema in migrations/. Each domain adds its tables here, named as in SQL;
 * rows are mapped to API shapes by small named functions in each domain, never spread.
 */
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;
/** A nullable timestamp: read as a Date (or null), written as a Date or an ISO string. */
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
export type JsonObject = Record<string, unknown>;

export interface OrganizationsTable {
  id: string;
  name: string;
  billing_email: string;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface UsersTable {
  id: string;
  email: string;
  full_name: string | null;
  short_name: string | null;
  global_role: Generated<string>;
  password_hash: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface MembershipsTable {
  id: string;
  organization_id: string;
  user_id: string;
  role: string;
  invited_email: string | null;
  invitation_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ServiceAccountsTable {
  id: string;
  organization_id: string;
  name: string;
  role: string;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ApiKeysTable {
  id: string;
  name: string;
  token_hash: string;
  token_prefix: string;
  user_id: string | null;
  service_account_id: string | null;
  organization_id: string;
  created_by_id: string | null;
  expires_at: Date | string | null;
  revoked_at: Date | string | null;
  last_used_at: Date | string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PipelinesTable {
  id: string;
  organization_id: string;
  project_id: string | null;
  given_id: string | null;
  name: string;
  description: string | null;
  latest_version: Generated<number>;
  created_by_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PipelineVersionsTable {
  id: string;
  organization_id: string;
  pipeline_id: string;
  version: number;
  /** A PipelineConfig (src/pipelines/pipeline-config.ts), written as JSON text. */
  config: Json;
  created_by_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface Database extends EngineTables {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  service_accounts: ServiceAccountsTable;
  api_keys: ApiKeysTable;
  pipelines: PipelinesTable;
  pipeline_versions: PipelineVersionsTable;
  projects: ProjectsTable;
  cloud_accounts: CloudAccountsTable;
  execution_environments: ExecutionEnvironmentsTable;
  environments: EnvironmentsTable;
  default_value_definitions: DefaultValueDefinitionsTable;
  default_values: DefaultValuesTable;
}

export interface StacksTable {
  id: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  given_id: string | null;
  name: string;
  type: Generated<string>;
  source: Json | null;
  variables: Json;
  change_pipeline_id: string;
  destroy_pipeline_id: string;
  active_run_id: string | null;
  latest_run_id: string | null;
  output: Json | null;
  first_applied_at: Date | string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface PipelineRunsTable {
  id: string;
  organization_id: string;
  pipeline_id: string;
  pipeline_version_id: string;
  stack_id: string | null;
  status: string;
  action: string | null;
  autoapprove: Generated<boolean>;
  description: Generated<string>;
  input: Json | null;
  trigger_metadata: Json | null;
  attempt_epoch: Generated<number>;
  admitted_at: Date | string | null;
  created_by_id: string | null;
  started_at: Date | string | null;
  completed_at: Date | string | null;
  last_attempt_started_at: Date | string | null;
  error: Json | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface StepExecutionsTable {
  id: string;
  organization_id: string;
  pipeline_run_id: string;
  step_id: string;
  step_name: string;
  step_type: string;
  status: string;
  attempt_epoch: number;
  retry_attempt: Generated<number>;
  is_last_retry: Generated<boolean>;
  queue_reason: Generated<string>;
  input_data: Json<JsonObject> | null;
  output_data: Json<JsonObject> | null;
  status_detail: Json<JsonObject> | null;
  error: Json<JsonObject> | null;
  engine_job_id: string | null;
  dispatched_at: NullableTimestamp;
  lease_owner: string | null;
  /** The lease's fencing token: bumped by every claim (migrations/0006_lease_epoch.sql). */
  lease_epoch: Generated<number>;
  lease_expires_at: NullableTimestamp;
  heartbeat_at: NullableTimestamp;
  started_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface StepLogsTable {
  step_execution_id: string;
  seq: number;
  stream: string;
  line: string;
  created_at: CreatedAt;
}

export interface RunTransitionsTable {
  id: Generated<number>;
  pipeline_run_id: string;
  step_execution_id: string | null;
  from_status: string | null;
  to_status: string;
  reason: string;
  actor: string | null;
  created_at: CreatedAt;
}

/** The run engine's tables (migrations/0004_runs.sql). */
export interface EngineTables {
  stacks: StacksTable;
  pipeline_runs: PipelineRunsTable;
  step_executions: StepExecutionsTable;
  step_logs: StepLogsTable;
  run_transitions: RunTransitionsTable;
}

/** The catalogue (migrations/0002_catalogue.sql). */
export interface ProjectsTable {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  description: string | null;
  error: Json | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface CloudAccountsTable {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  provider: Generated<string>;
  account_id: string;
  role_arn: string;
  external_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface ExecutionEnvironmentsTable {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  type: string;
  cloud_account_id: string | null;
  region: string | null;
  vpc_id: string | null;
  subnet_id: string | null;
  security_group_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface EnvironmentsTable {
  id: string;
  organization_id: string;
  project_id: string;
  given_id: string;
  name: string;
  description: string | null;
  execution_environment_id: string | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface DefaultValueDefinitionsTable {
  id: string;
  organization_id: string;
  given_id: string;
  name: string;
  description: string | null;
  schema: Json;
  created_by_type: Generated<string>;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface DefaultValuesTable {
  id: string;
  organization_id: string;
  default_value_definition_id: string;
  parent_id: string;
  parent_type: string;
  value: Json | null;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}
