// The value sets of the database's enum-like text columns, each listed once. The generated Database
// interface (database.ts) types those columns with the unions below (scripts/db-types.ts maps them), and
// the generator refuses to run when a column's SQL check constraint lists other values than its list here.
// TypeBox schemas take their StringEnum from the same lists, so SQL, the row types and the API agree.

export const RUN_STATUSES = ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A step execution's status: a run's, plus SKIPPED (a step whose run went another way). */
export const STEP_STATUSES = [...RUN_STATUSES, 'SKIPPED'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The statuses of a run that is not finished: it holds (or waits for) its stack, and blocks deletes. */
export const ACTIVE_RUN_STATUSES = ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL'] as const satisfies readonly RunStatus[];

export const RUN_ACTIONS = ['plan', 'apply', 'destroy'] as const;
export type RunAction = (typeof RUN_ACTIONS)[number];

export const LOG_STREAMS = ['stdout', 'stderr', 'system'] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

export const STACK_TYPES = ['OPENTOFU'] as const;
export type StackType = (typeof STACK_TYPES)[number];

/** CLOUD runs steps in the organization's AWS network; LOCAL runs them on the worker host. */
export const EXECUTION_ENVIRONMENT_TYPES = ['CLOUD', 'LOCAL'] as const;
export type ExecutionEnvironmentType = (typeof EXECUTION_ENVIRONMENT_TYPES)[number];

export const CLOUD_PROVIDERS = ['AWS'] as const;
export type CloudProvider = (typeof CLOUD_PROVIDERS)[number];

/** Where a default value is set; the nearest scope to an environment wins (environment, then project, then organization). */
export const PARENT_TYPES = ['ORGANIZATION', 'PROJECT', 'ENVIRONMENT'] as const;
export type ParentType = (typeof PARENT_TYPES)[number];

/** SYSTEM definitions are seeded by Plinth and read-only to users. */
export const CREATED_BY_TYPES = ['SYSTEM', 'USER'] as const;
export type CreatedByType = (typeof CREATED_BY_TYPES)[number];

/** A user's role across organizations: a SUPER_ADMIN acts as OWNER in every one. */
export const GLOBAL_ROLES = ['USER', 'SUPER_ADMIN'] as const;
export type GlobalRole = (typeof GLOBAL_ROLES)[number];

/** The Git hosting a code source or self-hosted server speaks (branches, webhooks, OAuth endpoints). */
export const GIT_PROVIDERS = ['GITHUB', 'GITLAB', 'BITBUCKET', 'GITEA', 'GENERIC'] as const;
export type GitProvider = (typeof GIT_PROVIDERS)[number];

/** How a code source authenticates: nothing, a token, a Git app installation, or an OAuth connection. */
export const GIT_AUTH_TYPES = ['NONE', 'TOKEN', 'APP_INSTALLATION', 'OAUTH'] as const;
export type GitAuthType = (typeof GIT_AUTH_TYPES)[number];

/** What a single-use Git state was issued for. */
export const GIT_FLOW_KINDS = ['OAUTH', 'APP_INSTALL'] as const;
export type GitFlowKind = (typeof GIT_FLOW_KINDS)[number];
/** Who an audit row names as its actor: the principal types of platform/auth/principal.ts, or SYSTEM (retention). */
/** Who a request acts as: a user through a membership, or a service account. */
export const PRINCIPAL_TYPES = ['MEMBERSHIP', 'SERVICE_ACCOUNT'] as const;
export type PrincipalType = (typeof PRINCIPAL_TYPES)[number];

export const AUDIT_ACTOR_TYPES = ['MEMBERSHIP', 'SERVICE_ACCOUNT', 'SYSTEM'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** DENIED: a permission check refused the request; FAILURE: any other error; SUCCESS: it was done. */
export const AUDIT_OUTCOMES = ['SUCCESS', 'FAILURE', 'DENIED'] as const;
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** MODULE: a deploy of a module instance (a run of its stack); CONTAINER_SERVICE: an ECS service deployment seen in cloud events. */
export const DEPLOYMENT_TYPES = ['MODULE', 'CONTAINER_SERVICE'] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];

export const DEPLOYMENT_STATUSES = ['IN_PROGRESS', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** What started a deployment: a deploy request, an environment's deploy, a change seen in the cloud, a redeploy or a rollback. */
export const DEPLOYMENT_TRIGGER_SOURCES = ['API', 'ENVIRONMENT_DEPLOY', 'EVENT_BUS', 'REDEPLOY', 'ROLLBACK'] as const;
export type DeploymentTriggerSource = (typeof DEPLOYMENT_TRIGGER_SOURCES)[number];

export const DEPLOYMENT_RESOURCE_TYPES = ['CONTAINER_TASK'] as const;
export type DeploymentResourceType = (typeof DEPLOYMENT_RESOURCE_TYPES)[number];

/**
 * What became of a received cloud event: APPLIED to a deployment or task; STALE, older than what its
 * resource already shows; UNMATCHED, about a resource of no module instance; UNKNOWN, of a kind Plinth
 * does not read.
 */
export const CLOUD_EVENT_OUTCOMES = ['APPLIED', 'STALE', 'UNMATCHED', 'UNKNOWN'] as const;
export type CloudEventOutcome = (typeof CLOUD_EVENT_OUTCOMES)[number];

export const DOMAIN_STATUSES = ['PENDING_VERIFICATION', 'VERIFIED', 'DETACHED'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/** REQUESTING: ACM has not answered yet (it is asked again); then ACM's own states, as Plinth follows them. */
export const CERTIFICATE_STATUSES = ['REQUESTING', 'PENDING_VALIDATION', 'ISSUED', 'FAILED', 'EXPIRED'] as const;
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];

export const DOMAIN_EVENT_KINDS = [
  'DOMAIN_ATTACHED',
  'DNS_VERIFICATION_PENDING',
  'DNS_VERIFIED',
  'CERTIFICATE_REQUESTED',
  'CERTIFICATE_ISSUED',
  'CERTIFICATE_EXPIRING',
  'CERTIFICATE_EXPIRED',
  'CERTIFICATE_RENEWAL_ACTION_REQUIRED',
  'CERTIFICATE_FAILED',
  'DOMAIN_DETACHED',
] as const;
export type DomainEventKind = (typeof DOMAIN_EVENT_KINDS)[number];

/** What a live feed entry is about (GET /events/stream). */
export const FEED_ENTRY_KINDS = ['DEPLOYMENT', 'DEPLOYMENT_RESOURCE', 'DOMAIN_EVENT'] as const;
export type FeedEntryKind = (typeof FEED_ENTRY_KINDS)[number];
