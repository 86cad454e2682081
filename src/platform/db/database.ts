import type { ColumnType, Generated } from 'kysely';

/**
 * The Kysely view of the schema in migrations/. Each domain adds its tables here, named as in SQL;
 * rows are mapped to API shapes by small named functions in each domain, never spread.
 */
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;

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

export interface Database {
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
