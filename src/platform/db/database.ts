// The Kysely view of the schema. The interface itself is generated from the migrations into
// database.generated.ts (`npm run db:types`); this file gives it the names the code uses. A row type is
// `Selectable<Database['table']>` (or a Pick of it) in the domain's repo, never a hand-written copy.

import type { DB } from './database.generated.ts';

export type Database = DB;
export type { JsonObject, JsonValue } from './column-types.ts';

export type OrganizationsTable = DB['organizations'];
export type UsersTable = DB['users'];
export type MembershipsTable = DB['memberships'];
export type ServiceAccountsTable = DB['service_accounts'];
export type ApiKeysTable = DB['api_keys'];
export type ProjectsTable = DB['projects'];
export type EnvironmentsTable = DB['environments'];
export type CloudAccountsTable = DB['cloud_accounts'];
export type ExecutionEnvironmentsTable = DB['execution_environments'];
export type DefaultValueDefinitionsTable = DB['default_value_definitions'];
export type DefaultValuesTable = DB['default_values'];
export type PipelinesTable = DB['pipelines'];
export type PipelineVersionsTable = DB['pipeline_versions'];
export type StacksTable = DB['stacks'];
export type PipelineRunsTable = DB['pipeline_runs'];
export type StepExecutionsTable = DB['step_executions'];
export type StepLogsTable = DB['step_logs'];
export type RunTransitionsTable = DB['run_transitions'];
export type StackStateVersionsTable = DB['stack_state_versions'];
export type StackStateLocksTable = DB['stack_state_locks'];
export type StateRunCredentialsTable = DB['state_run_credentials'];
export type StackSensitiveVariablesTable = DB['stack_sensitive_variables'];
export type StackPlansTable = DB['stack_plans'];
export type AuditEventsTable = DB['audit_events'];
export type AuditChainHeadsTable = DB['audit_chain_heads'];
export type AuditSettingsTable = DB['audit_settings'];
export type AuditWebhookDeliveriesTable = DB['audit_webhook_deliveries'];
export type ModuleDefinitionsTable = DB['module_definitions'];
export type ModuleVersionsTable = DB['module_versions'];
export type ModuleInstancesTable = DB['module_instances'];
export type ModuleReferencesTable = DB['module_references'];
export type CloudEventsTable = DB['cloud_events'];
export type DeploymentsTable = DB['deployments'];
export type DeploymentResourcesTable = DB['deployment_resources'];
export type DomainsTable = DB['domains'];
export type CertificateIssuancesTable = DB['certificate_issuances'];
export type DomainEventsTable = DB['domain_events'];
export type FeedEntriesTable = DB['feed_entries'];
