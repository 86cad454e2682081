import { ENGINE_OUTCOME_CODES } from '../platform/errors.ts';
import type { ErrorBody } from '../platform/schema.ts';

/**
 * Every error code the engine writes on a run or a step execution: the outcome codes of the one list
 * of codes (src/platform/errors.ts). API errors (`Api:…`) are the typed errors beside them.
 */
export const ENGINE_ERROR_CODES = ENGINE_OUTCOME_CODES;
export type EngineErrorCode = (typeof ENGINE_ERROR_CODES)[number];

export function engineError(code: EngineErrorCode, message: string, metadata?: Record<string, unknown>): ErrorBody {
  return metadata ? { code, message, metadata } : { code, message };
}
