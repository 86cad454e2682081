import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PlinthApiError, type ErrorCode } from '@plinth/sdk';
import { openApiDocument } from '../scripts/sdk-types.ts';
import { ENGINE_ERROR_CODES } from '../src/engine/engine-errors.ts';
import { ERROR_CODES } from '../src/platform/errors.ts';

describe('the error codes the API documents', () => {
  it('are the server list, as the enum of ErrorBody.code in /openapi.json', async () => {
    const doc = (await openApiDocument()) as { components: { schemas: { ErrorBody: { properties: { code: { enum: string[] } } } } } };
    assert.deepEqual(doc.components.schemas.ErrorBody.properties.code.enum, [...ERROR_CODES]);
  });

  it('include every outcome the engine writes on a run or step execution', () => {
    const listed = new Set<string>(ERROR_CODES);
    assert.deepEqual(
      ENGINE_ERROR_CODES.filter((code) => !listed.has(code)),
      [],
    );
  });

  it('type PlinthApiError.code as the documented codes, still open to a code a newer server sends', () => {
    const known: ErrorCode = 'Api:Stack:BUSY';
    // A documented code and an unknown one both compile: `npm run typecheck` checks these lines.
    const codes: PlinthApiError['code'][] = [known, 'Sdk:Response:REDIRECT', 'Api:Something:ADDED_LATER'];
    assert.deepEqual(codes, ['Api:Stack:BUSY', 'Sdk:Response:REDIRECT', 'Api:Something:ADDED_LATER']);
    // Never called: the line only has to fail to compile.
    const strict = (): ErrorCode =>
      // @ts-expect-error ErrorCode holds the documented codes only
      'Api:Something:ADDED_LATER';
    assert.equal(typeof strict, 'function');
  });

  it('PlinthApiError.is takes only a known code, and matches the code sent', () => {
    const error = new PlinthApiError(409, { code: 'Api:Stack:BUSY', message: 'busy' });
    assert.ok(error.is('Api:Stack:BUSY'));
    assert.ok(!error.is('Api:Stack:NOT_FOUND'));
    // @ts-expect-error a misspelt code does not compile
    assert.ok(!error.is('Api:Stak:BUSY'));
  });
});
