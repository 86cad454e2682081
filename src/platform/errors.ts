// The typed errors of Plinth. Each carries its HTTP status and its `<Namespace>:<Entity>:<REASON>` code;
// the one error handler in http/error-handler.ts turns them into ErrorBody.

/**
 * The outcomes the engine records on a run or a step execution (docs/engine.md): codes of the ErrorBody
 * in their `error`, not of an API answer. Kept here, in the one list of codes, for the engine to use.
 */
export const ENGINE_OUTCOME_CODES = [
  'Engine:Run:STEP_FAILED',
  'Engine:Run:CANCELLED',
  'Engine:Approval:REJECTED',
  /** The worker holding the attempt stopped renewing its lease: its outcome is unknown. */
  'Engine:Worker:LOST',
  /** The worker itself failed while running the attempt (a bug, not the step's fault). */
  'Engine:Worker:ERROR',
  'Engine:Script:FAILED',
  'Engine:Script:SPAWN_FAILED',
  'Engine:Step:TIMED_OUT',
  /** The step took more of the disk than PLINTH_STEP_DISK_MB or PLINTH_STEP_DISK_FILES allow (or could not be measured): it was killed. */
  'Engine:Step:DISK_LIMIT',
  'Engine:ExecutionEnvironment:UNSUPPORTED',
  'Engine:StepType:NOT_IMPLEMENTED',
  'Engine:StepType:NOT_DISPATCHABLE',
  /** No isolation on this host and no single-tenant opt-out (PLINTH_SANDBOX): script steps refuse to run. */
  'Engine:Sandbox:UNAVAILABLE',
  /** Some of the step's output could not be stored after retries: a step never succeeds with lines missing. */
  'Engine:Log:STORE_FAILED',
  /** An OpenTofu step of a run that has no stack, or whose stack is gone. */
  'OpenTofu:Step:NO_STACK',
  /** An OpenTofu command exited unsuccessfully (its output is in the step's log). */
  'OpenTofu:Command:FAILED',
  /** An apply found no saved plan of its run's attempt (no plan step ran before it). */
  'OpenTofu:Plan:NOT_FOUND',
  /** The saved plan does not open as this run's and attempt's: it is another run's, or an older attempt's. */
  'OpenTofu:Plan:NOT_THIS_RUN',
  /** A destroy step met a change plan, or an apply step a destroy plan. */
  'OpenTofu:Plan:WRONG_KIND',
  /** The stack's code declares a backend in an override file, which could move its state and credential elsewhere. */
  'OpenTofu:Backend:OVERRIDDEN',
  /** `init` recorded another backend than Plinth's (caught before anything used it). */
  'OpenTofu:Backend:NOT_PLINTH',
  /** The stack's sensitive values make more text to mask than a step's log mask holds (MAX_MASKED_FORM_BYTES). */
  'OpenTofu:Mask:TOO_LARGE',
  /** What `show -json`, `output -json` or the plan file gave back is not what OpenTofu writes, or too large. */
  'OpenTofu:Output:INVALID',
  /** A reference value of the stack's variables names an instance or output whose value its producer's state does not hold. */
  'OpenTofu:Reference:UNRESOLVED',
  /** The checkout of the stack's source failed: the code source is gone, its credential refused, the ref unknown... */
  'Engine:Checkout:FAILED',
  /** The stack's source names a ref or path Plinth refuses (an option, a refspec, a path leaving the checkout). */
  'Engine:Checkout:INVALID_SOURCE',
  /** The attempt's lease was taken from this worker before it could record the run's commit. */
  'Engine:Checkout:FENCED',
] as const;

/**
 * The errors Plinth records from what AWS says of a deployment, a task or a certificate (in their `error`;
 * docs/deployments.md, docs/domains.md).
 */
export const CLOUD_OUTCOME_CODES = [
  /** ECS failed the service deployment (its circuit breaker, say): the message is ECS's reason. */
  'Ecs:Deployment:FAILED',
  /** A container of the task exited with a code other than 0. */
  'Ecs:Task:CONTAINER_EXITED',
  /** The task stopped without being asked to: the message holds ECS's stop code and reason. */
  'Ecs:Task:STOPPED',
  /** ACM failed, timed out, revoked or gave up the certificate. */
  'Aws:Certificate:FAILED',
] as const;
export type CloudOutcomeCode = (typeof CLOUD_OUTCOME_CODES)[number];

/**
 * Every code an ErrorBody can carry: the answers of the API (`Api:`, `Auth:`, `Git:`, `OpenTofu:State…`)
 * and the outcomes the engine writes on a run or step execution (`Engine:`, `OpenTofu:`) or cloud events
 * on a deployment, task or certificate (`Ecs:`, `Aws:`). AppError and
 * its subclasses take only these, so a new code is added here or does not compile; the ErrorBody
 * schema's `code` is an enum of this list, so /openapi.json (and the SDK's types) name every one.
 */
export const ERROR_CODES = [
  // The request itself.
  'Api:Request:INVALID',
  'Api:Request:INVALID_HEADER',
  'Api:Request:MALFORMED_JSON',
  'Api:Request:METHOD_NOT_ALLOWED',
  'Api:Request:TOO_DEEP',
  'Api:Request:TOO_LARGE',
  'Api:Request:UNSUPPORTED_MEDIA_TYPE',
  'Api:Cursor:INVALID',
  'Api:Route:NOT_FOUND',
  'Api:Internal:ERROR',

  // Credentials and permissions.
  'Auth:Credential:MISSING',
  'Auth:Credential:INVALID',
  'Auth:Credential:EXPIRED',
  'Auth:Credential:REVOKED',
  'Auth:Credential:TOO_MANY_FAILURES',
  'Auth:Organization:FORBIDDEN',
  'Auth:Permission:DENIED',
  'Auth:Principal:NOT_A_USER',
  /** A web console form or htmx request without its session's anti-forgery token. */
  'Auth:Csrf:INVALID',

  // Resources of the API.
  'Api:ApiKey:NOT_FOUND',
  'Api:ApiKey:AMBIGUOUS_OWNER',
  'Api:ApiKey:INVALID_EXPIRY',
  'Api:CloudAccount:NOT_FOUND',
  'Api:CloudAccount:ALREADY_EXISTS',
  'Api:CloudAccount:IN_USE',
  'Api:CloudAccount:ROLE_ACCOUNT_MISMATCH',
  /** An event sent without its cloud account's ingest secret (or to an account that does not exist). */
  'Api:CloudEvent:UNVERIFIED',
  'Api:CodeSource:NOT_FOUND',
  'Api:CodeSource:ALREADY_EXISTS',
  'Api:CodeSource:IN_USE',
  'Api:CodeSource:CREDENTIAL_IN_URL',
  'Api:CodeSource:INVALID_AUTH',
  'Api:CodeSource:INVALID_URL',
  'Api:DefaultValue:NOT_FOUND',
  'Api:DefaultValue:ALREADY_EXISTS',
  'Api:DefaultValue:INVALID_VALUE',
  'Api:DefaultValueDefinition:NOT_FOUND',
  'Api:DefaultValueDefinition:ALREADY_EXISTS',
  'Api:DefaultValueDefinition:IN_USE',
  'Api:DefaultValueDefinition:INVALID_SCHEMA',
  'Api:DefaultValueDefinition:SCHEMA_REJECTS_VALUES',
  'Api:DefaultValueDefinition:SYSTEM_MANAGED',
  'Api:Deployment:NOT_FOUND',
  /** Another deployment of the same module instance has not finished. */
  'Api:Deployment:IN_PROGRESS',
  /** The deployment holds no release to replay (a container deployment whose task definition is unknown). */
  'Api:Deployment:NOT_REDEPLOYABLE',
  'Api:DeploymentResource:NOT_FOUND',
  'Api:Domain:NOT_FOUND',
  'Api:Domain:ALREADY_EXISTS',
  'Api:Domain:INVALID_HOSTNAME',
  /** The instance's stack names no ECS service to take the certificate's region from. */
  'Api:Domain:REGION_REQUIRED',
  'Api:Environment:NOT_FOUND',
  'Api:Environment:ALREADY_EXISTS',
  'Api:Environment:IN_USE',
  'Api:ExecutionEnvironment:NOT_FOUND',
  'Api:ExecutionEnvironment:ALREADY_EXISTS',
  'Api:ExecutionEnvironment:IN_USE',
  'Api:GitAppInstallation:NOT_FOUND',
  'Api:GitAppInstallation:TAKEN',
  'Api:GitIdentity:NOT_FOUND',
  'Api:GitSelfHostedServer:NOT_FOUND',
  'Api:GitSelfHostedServer:IN_USE',
  'Api:Membership:NOT_FOUND',
  'Api:Membership:ALREADY_EXISTS',
  'Api:Membership:LAST_OWNER',
  'Api:ModuleDefinition:NOT_FOUND',
  'Api:ModuleDefinition:ALREADY_EXISTS',
  'Api:ModuleDefinition:IN_USE',
  'Api:ModuleDefinition:GLOBAL_READ_ONLY',
  'Api:ModuleInstance:NOT_FOUND',
  'Api:ModuleInstance:ALREADY_EXISTS',
  'Api:ModuleInstance:INVALID_INPUTS',
  'Api:ModuleInstance:REFERENCE_CYCLE',
  'Api:ModuleInstance:BROKEN_REFERENCES',
  'Api:ModuleInstance:BUSY',
  'Api:ModuleInstance:DELETING',
  'Api:ModuleInstance:IN_USE',
  'Api:ModuleVersion:NOT_FOUND',
  'Api:ModuleVersion:ALREADY_EXISTS',
  'Api:ModuleVersion:INVALID_VERSION',
  'Api:ModuleVersion:NOT_NEWER',
  'Api:ModuleVersion:INVALID',
  'Api:ModuleVersion:OTHER_DEFINITION',
  /** 429: the caller, its organization or this API process already runs as many publishes as it may at once. */
  'Api:ModuleVersion:TOO_MANY_PUBLISHES',
  'Api:Organization:NOT_FOUND',
  /** A default value's parentId names no organization, project or environment of the caller's. */
  'Api:Parent:NOT_FOUND',
  'Api:Pipeline:NOT_FOUND',
  'Api:Pipeline:ALREADY_EXISTS',
  'Api:Pipeline:IN_USE',
  'Api:Pipeline:RUN_ACTIVE',
  'Api:PipelineConfig:INVALID',
  'Api:PipelineRun:NOT_FOUND',
  'Api:PipelineRun:NOT_CANCELLABLE',
  'Api:PipelineRun:NOT_RETRYABLE',
  'Api:PipelineVersion:NOT_FOUND',
  'Api:Project:NOT_FOUND',
  'Api:Project:ALREADY_EXISTS',
  'Api:Project:IN_USE',
  /** A resource the request refers to was deleted while the request ran. */
  'Api:Reference:NOT_FOUND',
  'Api:SensitiveVariable:NOT_FOUND',
  'Api:ServiceAccount:NOT_FOUND',
  'Api:Stack:NOT_FOUND',
  'Api:Stack:ALREADY_EXISTS',
  'Api:Stack:IN_USE',
  'Api:Stack:BUSY',
  'Api:Stack:ENVIRONMENT_NOT_IN_PROJECT',
  /** The stack belongs to a module instance: change the instance instead. */
  'Api:Stack:MANAGED_BY_MODULE_INSTANCE',
  'Api:StateVersion:NOT_FOUND',
  'Api:StateWorkspace:NOT_FOUND',
  'Api:StepExecution:NOT_FOUND',
  'Api:StepExecution:NOT_WAITING_FOR_APPROVAL',
  'Api:StepLogs:TOO_MANY_FOLLOWERS',
  /** 429: the caller already follows as many live feed streams as one caller may at once. */
  'Api:EventStream:TOO_MANY_STREAMS',
  'Api:User:NOT_FOUND',

  // Git servers, apps, OAuth and webhooks.
  'Git:App:BAD_RESPONSE',
  'Git:App:GRANT_REFUSED',
  'Git:App:NOT_ACCESSIBLE',
  'Git:App:NOT_ALLOWED',
  'Git:App:NOT_CONFIGURED',
  'Git:App:NO_INSTALLATION',
  'Git:App:TOKEN_REFUSED',
  'Git:App:UNREACHABLE',
  'Git:App:UNVERIFIED',
  'Git:Archive:TOO_LARGE',
  'Git:Credential:MISSING',
  'Git:Credential:REFUSED',
  'Git:Fetch:FAILED',
  'Git:Fetch:TIMEOUT',
  /** 422: the fetch's pack is larger than PLINTH_GIT_CACHE_MAX_BYTES. */
  'Git:Fetch:TOO_LARGE',
  /** The Git server has no user API Plinth knows of (register its userUrl). */
  'Git:Identity:NO_USER_API',
  /** A Git sign-in by an account no Plinth user has linked. */
  'Git:Identity:NOT_LINKED',
  /** The account is linked to another Plinth user. */
  'Git:Identity:TAKEN',
  'Git:OAuth:BAD_RESPONSE',
  'Git:OAuth:DENIED',
  'Git:OAuth:EXPIRED',
  'Git:OAuth:GRANT_REFUSED',
  'Git:OAuth:NOT_ALLOWED',
  'Git:OAuth:NOT_CONNECTED',
  'Git:OAuth:REFRESH_REFUSED',
  'Git:OAuth:UNREACHABLE',
  'Git:Path:INVALID',
  'Git:Path:NOT_A_DIRECTORY',
  'Git:Path:NOT_FOUND',
  'Git:Ref:INVALID',
  'Git:Ref:NOT_FOUND',
  'Git:Repository:NOT_ALLOWED',
  'Git:Repository:NOT_FOUND',
  'Git:Repository:TIMEOUT',
  /** 429: the caller, its organization or this API process already lists as many repositories' branches as it may at once. */
  'Git:Repository:TOO_MANY_LISTINGS',
  'Git:Repository:UNREACHABLE',
  'Git:Sandbox:UNAVAILABLE',
  'Git:State:INVALID',
  'Git:State:EXPIRED',
  'Git:State:USED',
  'Git:State:OTHER_BROWSER',
  'Git:Webhook:INVALID',
  'Git:Webhook:UNVERIFIED',

  /** AWS refused a request Plinth made in a cloud account (502; `metadata.awsErrorCode` names AWS's code). */
  'Aws:Request:FAILED',

  // The OpenTofu state backend.
  'OpenTofu:State:CHECKSUM_MISMATCH',
  'OpenTofu:State:INVALID',
  'OpenTofu:State:LINEAGE_MISMATCH',
  'OpenTofu:State:OTHER_STACK',
  'OpenTofu:State:STALE_SERIAL',
  'OpenTofu:StateLock:INVALID',
  'OpenTofu:StateLock:LOCKED',
  'OpenTofu:StateLock:NOT_HELD',
  'OpenTofu:StateLock:NOT_HOLDER',

  ...ENGINE_OUTCOME_CODES,
  ...CLOUD_OUTCOME_CODES,
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The entities `E` of the `Api:E:<reason>` codes that end in `reason` (NotFoundError's entities for NOT_FOUND). */
export type ApiEntityWith<Reason extends string> = ErrorCode extends infer C ? (C extends `Api:${infer E}:${Reason}` ? E : never) : never;
/** Every entity of an `Api:<Entity>:<REASON>` code. */
export type ApiEntity = ApiEntityWith<string>;
/** The reasons listed for an entity's `Api:` codes. */
export type ApiReasonOf<E extends string> = ErrorCode extends infer C ? (C extends `Api:${E}:${infer R}` ? R : never) : never;

export interface ErrorDetailSection {
  title: string;
  render: 'list' | 'object';
  items?: string[];
  object?: Record<string, unknown>;
}

export interface AppErrorOptions {
  description?: string;
  details?: ErrorDetailSection[];
  metadata?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly description?: string;
  readonly details?: ErrorDetailSection[];
  readonly metadata?: Record<string, unknown>;

  constructor(status: number, code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.description = options.description;
    this.details = options.details;
    this.metadata = options.metadata;
  }
}

/** 400: the request itself is malformed or fails its schema. */
export class BadRequestError extends AppError {
  constructor(message: string, problems: string[] = [], code: ErrorCode = 'Api:Request:INVALID') {
    super(400, code, message, problems.length ? { details: [{ title: 'Problems', render: 'list', items: problems }] } : {});
  }
}

export class UnauthenticatedError extends AppError {
  constructor(reason: 'MISSING' | 'INVALID' | 'EXPIRED' | 'REVOKED', message: string) {
    super(401, `Auth:Credential:${reason}`, message);
  }
}

/** 429: the caller must wait before trying again; `retryAfterSeconds` is sent as Retry-After. */
export class TooManyRequestsError extends AppError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly retryAfterSeconds: number,
    metadata?: Record<string, unknown>,
  ) {
    super(429, code, message, { metadata });
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, code: ErrorCode = 'Auth:Permission:DENIED', metadata?: Record<string, unknown>) {
    super(403, code, message, { metadata });
  }
}

/** 404, also for resources of another organization: their existence is never revealed. */
export class NotFoundError extends AppError {
  constructor(entity: ApiEntityWith<'NOT_FOUND'>, id?: string) {
    super(404, `Api:${entity}:NOT_FOUND`, id === undefined ? `${entity} not found` : `${entity} ${id} not found`);
  }
}

/** 409: the request conflicts with the current state (duplicate givenId, resource in use, busy). */
export class ConflictError<E extends ApiEntity = ApiEntity> extends AppError {
  constructor(entity: E, reason: ApiReasonOf<E>, message: string, options: AppErrorOptions = {}) {
    super(409, `Api:${entity}:${reason}` as ErrorCode, message, options);
  }
}

/** 422: a well-formed request that breaks a rule; every problem is listed. */
export class RuleViolationError<E extends ApiEntity = ApiEntity> extends AppError {
  constructor(entity: E, reason: ApiReasonOf<E>, message: string, problems: string[] = [], metadata?: Record<string, unknown>) {
    super(422, `Api:${entity}:${reason}` as ErrorCode, message, {
      details: problems.length ? [{ title: 'Problems', render: 'list', items: problems }] : undefined,
      metadata,
    });
  }
}
