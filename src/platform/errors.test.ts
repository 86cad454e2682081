import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError, ConflictError, ERROR_CODES, NotFoundError, RuleViolationError } from './errors.ts';

describe('the list of error codes', () => {
  it('holds each code once, each of the form <Namespace>:<Entity>:<REASON>', () => {
    assert.equal(new Set(ERROR_CODES).size, ERROR_CODES.length);
    for (const code of ERROR_CODES) assert.match(code, /^[A-Z][A-Za-z]*:[A-Z][A-Za-z]*:[A-Z][A-Z0-9_]*$/);
  });

  it('builds the codes of entity errors from the entity and reason', () => {
    assert.equal(new NotFoundError('Stack', 's1').code, 'Api:Stack:NOT_FOUND');
    assert.equal(new ConflictError('Stack', 'BUSY', 'busy').code, 'Api:Stack:BUSY');
    assert.equal(new RuleViolationError('PipelineConfig', 'INVALID', 'bad', ['x']).code, 'Api:PipelineConfig:INVALID');
  });

  it('refuses, at compile time, a code that is not listed', () => {
    // Never called: `npm run typecheck` fails if any line below compiles.
    const unlisted = () => [
      // @ts-expect-error not a listed code
      new AppError(400, 'Api:Request:SOMETHING_NEW', 'x'),
      // @ts-expect-error no Api:Nothing:NOT_FOUND
      new NotFoundError('Nothing', 'x'),
      // @ts-expect-error Api:Stack:NOT_FOUND is listed, Api:Stack:TAKEN is not
      new ConflictError('Stack', 'TAKEN', 'x'),
      // @ts-expect-error a reason of another entity
      new RuleViolationError('Project', 'INVALID', 'x'),
    ];
    assert.equal(typeof unlisted, 'function');
  });
});
