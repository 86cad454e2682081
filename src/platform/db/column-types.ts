// Column types the generated Database interface (database.ts) refers to by name; scripts/db-types.ts
// maps columns to them. A jsonb column is written as JSON text (JSON.stringify: `pg` would send a JS
// array as a PostgreSQL array) and read back parsed.

import type { ColumnType } from 'kysely';

export type JsonPrimitive = boolean | number | string | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue | undefined };
export type JsonObject = { [key: string]: JsonValue | undefined };

/** A jsonb column: any JSON value. */
export type JsonColumn = ColumnType<JsonValue, string, string>;

/** A jsonb column that always holds an object. */
export type JsonObjectColumn = ColumnType<JsonObject, string, string>;
