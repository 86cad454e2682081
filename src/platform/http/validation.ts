import Ajv, { type AnySchema, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { RULE_CHECKED } from '../schema.ts';

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

/**
 * What the request validator checks of a schema: the schema itself, except that each part marked
 * RuleChecked (platform/schema.ts) is only `{type: 'object'}`, its service checking the rest. The
 * schema given is not changed: the OpenAPI document shows it whole.
 */
export function validatedPart(schema: unknown): unknown {
  if (Array.isArray(schema)) {
    const items = schema.map(validatedPart);
    return items.some((item, i) => item !== schema[i]) ? items : schema;
  }
  if (schema === null || typeof schema !== 'object') return schema;
  if ((schema as Record<string, unknown>)[RULE_CHECKED] === true) return { type: 'object' };
  const entries = Object.entries(schema);
  const parts = entries.map(([key, value]) => [key, validatedPart(value)] as const);
  return parts.some(([, part], i) => part !== entries[i][1]) ? { ...schema, ...Object.fromEntries(parts) } : schema;
}

export const validatorCompiler: FastifySchemaCompiler<AnySchema> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  const validate = ajv.compile(validatedPart(schema) as AnySchema);
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
