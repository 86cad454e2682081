import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, BadRequestError, TooManyRequestsError, type ErrorCode } from '../errors.ts';
import type { ErrorBody } from '../schema.ts';
import { describeValidationErrors } from './validation.ts';

/** Fastify's own 4xx errors, by code, as Plinth codes; `message` replaces Fastify's where it would not say what to do. */
const FASTIFY_CODES: Record<string, { status: number; code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'Api:Request:TOO_LARGE' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'Api:Request:UNSUPPORTED_MEDIA_TYPE',
    message: 'The body must be JSON: send it with Content-Type: application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'Api:Request:INVALID' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'Api:Request:INVALID' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'Api:Request:MALFORMED_JSON' },
  FST_ERR_BAD_URL: { status: 400, code: 'Api:Request:INVALID' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 400, code: 'Api:Request:INVALID' },
};

export function toAppError(error: FastifyError): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error.validation) {
    const problems = describeValidationErrors(error.validation as never, error.validationContext ?? 'request');
    return new BadRequestError('The request does not match its schema', problems);
  }
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return new AppError(known.status, known.code, known.message ?? error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new AppError(error.statusCode, 'Api:Request:INVALID', error.message);
  }
  return undefined;
}

/**
 * The one place errors become ErrorBody. Internal errors never show their cause, except to a
 * super-administrator, for whom `isInternal` marks the extra detail. `metadata` (error parameters) is
 * withheld from everyone else too, so whatever a caller needs to act on an error is said in
 * `message` or `details`, never only in `metadata`.
 */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = toAppError(error);
  if (known) {
    const body: ErrorBody = { code: known.code, message: known.message, requestId: request.id };
    if (known.description) body.description = known.description;
    if (known.details) body.details = known.details;
    if (known.metadata && request.principal?.isSuperAdmin) body.metadata = known.metadata;
    if (known.status === 405 && known.metadata?.allow) reply.header('Allow', String(known.metadata.allow));
    if (known instanceof TooManyRequestsError) reply.header('Retry-After', String(known.retryAfterSeconds));
    return reply.status(known.status).send(body);
  }
  request.log.error({ err: error }, 'failed request');
  const body: ErrorBody = { code: 'Api:Internal:ERROR', message: 'An internal error occurred', requestId: request.id };
  if (request.principal?.isSuperAdmin) {
    body.isInternal = true;
    body.description = error.message;
    body.metadata = { name: error.name, stack: error.stack };
  }
  return reply.status(500).send(body);
}
