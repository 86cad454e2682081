import type { ErrorBody, ErrorCode, PlinthErrorCode, SdkErrorCode } from './types.js';

/**
 * PlinthApiError is an answer of the API that is not a success: its ErrorBody, whose `code`
 * (`<Namespace>:<Entity>:<REASON>`) is what callers branch on, never the message. The code is typed
 * as the codes the API documents (ErrorCode) plus the SDK's own, and still takes any string, since
 * a newer server may send a code this SDK does not know.
 */
export class PlinthApiError extends Error {
  readonly status: number;
  readonly code: PlinthErrorCode;
  readonly body: ErrorBody;
  readonly requestId?: string;

  constructor(status: number, body: ErrorBody) {
    super(`${body.message} (${body.code})`);
    this.name = 'PlinthApiError';
    this.status = status;
    this.code = body.code;
    this.body = body;
    this.requestId = body.requestId;
  }

  /**
   * is tells whether the error has `code`. Unlike `error.code === '…'`, which takes any string (the
   * code may be one a newer server added), it only takes a code this SDK knows: a typo does not compile.
   */
  is(code: ErrorCode | SdkErrorCode): boolean {
    return this.code === code;
  }

  /** The credential is missing, unknown, revoked or expired: the caller must log in again. */
  get isUnauthenticated(): boolean {
    return this.status === 401;
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }
}

/** PlinthTimeoutError: a wait did not see what it waited for in time. */
export class PlinthTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlinthTimeoutError';
  }
}

function isErrorBody(value: unknown): value is ErrorBody {
  return typeof value === 'object' && value !== null && typeof (value as ErrorBody).code === 'string' && typeof (value as ErrorBody).message === 'string';
}

/**
 * toApiError turns a failed response's parsed body into a PlinthApiError; a body that is not an
 * ErrorBody (a proxy's HTML page, say) gets a code of its own so callers still have one to read.
 */
export function toApiError(response: Response, body: unknown): PlinthApiError {
  if (isErrorBody(body)) return new PlinthApiError(response.status, body);
  const requestId = response.headers.get('x-request-id') ?? undefined;
  return new PlinthApiError(response.status, {
    code: `Sdk:Response:HTTP_${response.status}`,
    message: `The server answered ${response.status} ${response.statusText} without an error body`,
    ...(requestId ? { requestId } : {}),
  });
}
