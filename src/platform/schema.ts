import { Type, type TObject, type TSchema, type Static, type TUnsafe } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorCode } from './errors.ts';

/**
 * Shared TypeBox building blocks. Every route's request and response schema is made from these, so
 * the same objects validate requests, type handlers and write the OpenAPI document.
 */

/** A string enumeration as OpenAPI 3.0 understands it (`enum`, not `anyOf` of `const`). */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** The OpenAPI extension that marks a request schema its service checks itself (see RuleChecked). */
export const RULE_CHECKED = 'x-rule-checked';

/**
 * RuleChecked marks an object of a request body whose whole shape the schema states (in the OpenAPI
 * document, the SDK's types and the handler's) but which its service checks itself: against the same
 * shape and the rules a JSON Schema cannot say, listing every problem in one 422, the status of a
 * broken rule, where a schema failure would be a 400 stopping at what the schema sees. The request
 * validator only checks that it is an object (http/validation.ts); the service must check it before
 * any use.
 */
export function RuleChecked<T extends TObject>(schema: T): T {
  return Object.assign(schema, { [RULE_CHECKED]: true });
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

/** The list filters that find a record by what a person calls it: its givenId, or its exact name. */
export const NamedFilter = {
  givenId: Type.Optional({ ...GivenId, description: 'Only the record with this givenId' }),
  name: Type.Optional({ ...Name, description: 'Only records with exactly this name' }),
};
export interface NamedFilter {
  givenId?: string;
  name?: string;
}

/** A search of a list by name: what a person types to find a record (the console's command palette). */
export const SearchFilter = {
  search: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only records whose name or givenId holds this text, ignoring case' })),
};

export const ErrorDetailSection = Type.Object({
  title: Type.String(),
  render: StringEnum(['list', 'object'] as const),
  items: Type.Optional(Type.Array(Type.String())),
  object: Type.Optional(Type.Object({}, { additionalProperties: true })),
});

/**
 * The document lists every code (ERROR_CODES). The type also takes any other string: an `error` stored on
 * a run or step by an earlier version of Plinth keeps the code it was written with.
 */
const ErrorCodeSchema = Type.Unsafe<ErrorCode | (string & {})>({
  type: 'string',
  enum: [...ERROR_CODES],
  description: '<Namespace>:<Entity>:<REASON>, one of the codes listed. A client should accept a code it does not know: a newer server may send one.',
});

export const ErrorBody = Type.Object(
  {
    code: ErrorCodeSchema,
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

/** The query of a list kept in creation order, which either end can start from. */
export const OrderedPaginationQuery = Type.Object(
  {
    ...PaginationQuery.properties,
    order: Type.Optional(
      StringEnum(['asc', 'desc'] as const, {
        description: 'asc (the default): oldest first; desc: newest first. Send the same order with the cursor of a page it gave.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type OrderedPaginationQuery = Static<typeof OrderedPaginationQuery>;

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
