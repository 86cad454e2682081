/**
 * The operations of the published `/openapi.json`, in the shape the fuzz suite and the tenant-isolation
 * sweep need: nothing about a route is written by hand, so a new route is covered as soon as it exists.
 */
export type JsonSchema = Record<string, any>;

export interface QueryParam {
  name: string;
  schema: JsonSchema;
  required: boolean;
}

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI path, e.g. `/projects/{id}`. */
  path: string;
  pathParams: string[];
  query: QueryParam[];
  body?: JsonSchema;
  bodyRequired: boolean;
  isPublic: boolean;
  /** The response statuses the document lists for the operation. */
  statuses: string[];
}

export interface OpenApiDoc {
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, JsonSchema> };
}

export function operationsOf(doc: OpenApiDoc): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const parameters: any[] = op.parameters ?? [];
      const body = op.requestBody?.content?.['application/json']?.schema;
      operations.push({
        method: method.toUpperCase() as Operation['method'],
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema, required: p.required === true })),
        body,
        bodyRequired: op.requestBody?.required === true,
        isPublic: Array.isArray(op.security) && op.security.length === 0,
        statuses: Object.keys(op.responses ?? {}),
      });
    }
  }
  return operations;
}

/** Resolves `#/components/schemas/X` references. */
export function resolve(doc: OpenApiDoc, schema: JsonSchema): JsonSchema {
  let current = schema;
  for (let i = 0; current?.$ref && i < 10; i++) {
    const name = String(current.$ref).split('/').pop()!;
    current = doc.components.schemas[name];
  }
  return current ?? {};
}

/** The URL of an operation with its path parameters filled (already percent-encoded by the caller). */
export function urlOf(op: Operation, params: Record<string, string>, query = ''): string {
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => params[name] ?? 'x');
  return query ? `${path}?${query}` : path;
}
