import { sql } from 'kysely';

/** Whether the row's `name` or `given_id` holds `text`, ignoring case: a search, not an index lookup (lists are per organization). */
export function nameHolds(text: string) {
  return sql<boolean>`(strpos(lower(name), lower(${text})) > 0 or strpos(lower(coalesce(given_id, '')), lower(${text})) > 0)`;
}
