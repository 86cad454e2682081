import Ajv, { type AnySchema, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Two validators: bodies are checked exactly as sent (no coercion, no removal of unknown fields, so
 * `"5"` for a number and an unknown field are both 400), while query strings and path parameters,
 * which arrive as text, are coerced to the schema's types.
 */
function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv.default({
    allErrors: true,
    coerceTypes,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    // Discriminated unions (InputProperty) are checked against their one matching variant: see inputs.schema.ts.
    discriminator: true,
  });
  addFormats.default(ajv);
  // OpenAPI 3.0 keywords that TypeBox schemas may carry.
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<AnySchema> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  const validate = ajv.compile(schema);
  // V8 compiles a generated validator on its first call (tens of ms for the large ones): at start, not in a request.
  validate({});
  return validate;
};

/** One readable line per schema problem, with the JSON path of the offending field. */
export function describeValidationErrors(errors: ErrorObject[], context: string): string[] {
  return errors.map((e) => {
    const where = `${context}${e.instancePath}`;
    if (e.keyword === 'additionalProperties') {
      return `${where}/${String((e.params as { additionalProperty: string }).additionalProperty)}: unknown or read-only field`;
    }
    if (e.keyword === 'required') {
      return `${where}/${String((e.params as { missingProperty: string }).missingProperty)}: is required`;
    }
    if (e.keyword === 'enum') {
      return `${where}: must be one of ${((e.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    }
    return `${where}: ${e.message ?? 'is invalid'}`;
  });
}
