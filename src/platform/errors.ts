// The typed errors of Plinth. Each carries its HTTP status and its `<Namespace>:<Entity>:<REASON>` code;
// the one error handler in http/error-handler.ts turns them into ErrorBody.

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
  readonly code: string;
  readonly description?: string;
  readonly details?: ErrorDetailSection[];
  readonly metadata?: Record<string, unknown>;

  constructor(status: number, code: string, message: string, options: AppErrorOptions = {}) {
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
  constructor(message: string, problems: string[] = [], code = 'Api:Request:INVALID') {
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
    code: string,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, code, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, code = 'Auth:Permission:DENIED', metadata?: Record<string, unknown>) {
    super(403, code, message, { metadata });
  }
}

/** 404, also for resources of another organization: their existence is never revealed. */
export class NotFoundError extends AppError {
  constructor(entity: string, id?: string) {
    super(404, `Api:${entity}:NOT_FOUND`, id === undefined ? `${entity} not found` : `${entity} ${id} not found`);
  }
}

/** 409: the request conflicts with the current state (duplicate givenId, resource in use, busy). */
export class ConflictError extends AppError {
  constructor(entity: string, reason: string, message: string, options: AppErrorOptions = {}) {
    super(409, `Api:${entity}:${reason}`, message, options);
  }
}

/** 422: a well-formed request that breaks a rule; every problem is listed. */
export class RuleViolationError extends AppError {
  constructor(entity: string, reason: string, message: string, problems: string[] = [], metadata?: Record<string, unknown>) {
    super(422, `Api:${entity}:${reason}`, message, {
      details: problems.length ? [{ title: 'Problems', render: 'list', items: problems }] : undefined,
      metadata,
    });
  }
}
