/**
 * Rules applied to every route's request schemas when the route is registered (app.ts, onRoute), so a
 * new route obeys them without anyone remembering to, and the OpenAPI document shows them.
 */

/** PostgreSQL's `integer`: the range an integer parameter has unless its schema says narrower. */
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

type SchemaNode = Record<string, unknown>;

function isIntegerSchema(node: SchemaNode): boolean {
  return node.type === 'integer' || (Array.isArray(node.type) && node.type.includes('integer'));
}

/**
 * boundIntegers gives every `integer` in a request schema a minimum and a maximum within PostgreSQL's
 * `integer` range: a bound the schema already has is kept (when inside the range), a missing one is
 * added. An out-of-range value is then a 400 from the validator, never a database error. The schema
 * objects are changed in place (they are shared between routes; the change is idempotent).
 */
export function boundIntegers(schema: unknown, seen = new WeakSet<object>()): void {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  if (Array.isArray(schema)) {
    for (const item of schema) boundIntegers(item, seen);
    return;
  }
  const node = schema as SchemaNode;
  if (isIntegerSchema(node)) {
    if (typeof node.minimum !== 'number' || node.minimum < INT32_MIN) node.minimum = INT32_MIN;
    if (typeof node.maximum !== 'number' || node.maximum > INT32_MAX) node.maximum = INT32_MAX;
  }
  for (const value of Object.values(node)) boundIntegers(value, seen);
}
