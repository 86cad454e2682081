import { Type, type TSchema, type Static, type TUnsafe } from '@sinclair/typebox';

/**
 * Shared TypeBox building blocks. Every route's request and response schema is made from these, so
 * the same objects validate requests, type handlers and write the OpenAPI document.
 */

/** A string enumeration as OpenAPI 3.0 understands it (`enum`, not `anyOf` of `const`). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** Optional and nullable as OpenAPI 3.0 spells it. */
export function Nullable<T extends TSchema>(schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });
}

export const UtcDateTime = Type.Unsafe<Date | string>({
  type: 'string',
  format: 'date-time',
  description: 'RFC 3339 timestamp in UTC, with a trailing Z',
});

export const GIVEN_ID_PATTERN = '^[a-zA-Z0-9][a-zA-Z0-9_-]*$';
export const GivenId = Type.String({ minLength: 1, maxLength: 60, pattern: GIVEN_ID_PATTERN, description: 'Caller-chosen identifier' });

/** Default bound for free text fields, so a megabyte string is a 400 and not a stored row. */
export const Name = Type.String({ minLength: 1, maxLength: 255 });
export const Description = Type.String({ maxLength: 4096 });
export const Email = Type.String({ minLength: 3, maxLength: 320, format: 'email' });
export const Id = Type.String({ minLength: 1, maxLength: 64 });

export const IdParams = Type.Object({ id: Id }, { additionalProperties: false });
export type IdParams = Static<typeof IdParams>;

export const ErrorDetailSection = Type.Object({
  title: Type.String(),
  render: StringEnum(['list', 'object'] as const),
  items: Type.Optional(Type.Array(Type.String())),
  object: Type.Optional(Type.Object({}, { additionalProperties: true })),
});

export const ErrorBody = Type.Object(
  {
    code: Type.String({ description: '<Namespace>:<Entity>:<REASON>' }),
    message: Type.String(),
    action: Type.Optional(Type.Object({ label: Type.String(), url: Type.String() })),
    description: Type.Optional(Type.String()),
    details: Type.Optional(Type.Array(ErrorDetailSection)),
    isInternal: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
    requestId: Type.Optional(Type.String()),
  },
  { $id: 'ErrorBody', title: 'ErrorBody' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const PaginationMeta = Type.Object({
  limit: Type.Integer({ format: 'int32' }),
  nextCursor: Type.Optional(Type.String()),
  totalCount: Type.Optional(Type.Integer({ format: 'int32' })),
});

export const PaginationQuery = Type.Object(
  {
    cursor: Type.Optional(Nullable(Type.String({ maxLength: 512 }))),
    limit: Type.Optional(Nullable(Type.Integer({ format: 'int32' }))),
  },
  { additionalProperties: false },
);
export type PaginationQuery = Static<typeof PaginationQuery>;

/** `{data: T}`: the body of every single-resource response and of every create or update request. */
export function Envelope<T extends TSchema>(data: T) {
  return Type.Object({ data }, { additionalProperties: false });
}

/** `{data: T[], meta}`: the body of every list response. */
export function ListEnvelope<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item), meta: PaginationMeta });
}

/** A request body `{data: {...}}` whose inner object is strict: unknown and read-only fields are 400. */
export function Body<T extends TSchema>(data: T) {
  return Type.Object({ data }, { additionalProperties: false });
}

export const NoContent = Type.Null({ description: 'No content' });

/**
 * The schema with an example of what it describes: the OpenAPI document shows it as the media type's
 * `example` (test/conventions.openapi.test.ts checks that every example validates against its schema).
 */
export function Example<T extends TSchema>(schema: T, example: Static<T>): T {
  return { ...schema, examples: [example] };
}
