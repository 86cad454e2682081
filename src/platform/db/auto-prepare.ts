import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Server-side prepared statements for the statements a connection runs again and again. Kysely sends
 * every query unnamed, so PostgreSQL parses and plans it at each call; for the engine's run read (a
 * five-table join with correlated subqueries) planning costs about three times the execution. A
 * statement text seen `after` times on one connection is sent named from then on: parsed once per
 * connection, and planned generically once PostgreSQL finds that no worse. Bounded per connection:
 * at most `max` prepared texts, and counting stops (and starts again) past `max * 4` distinct texts,
 * so statements whose text varies (an `in` list of varying length) cannot grow memory on either side.
 *
 * A statement whose result columns a migration changed under a running process fails once with
 * SQLSTATE 0A000 ("cached plan must not change result type"); its text is then never prepared again
 * on that connection, and the caller's retry or the client's next request runs it unnamed.
 */
export interface AutoPrepareOptions {
  after: number;
  max: number;
}

type QueryFn = (...args: unknown[]) => unknown;

export function autoPrepare(client: pg.PoolClient | pg.Client, options: AutoPrepareOptions): void {
  const seen = new Map<string, number>();
  const prepared = new Map<string, string>();
  const refused = new Set<string>();
  const query = client.query.bind(client) as QueryFn;
  const named = (text: string): string | undefined => {
    const name = prepared.get(text);
    if (name || refused.has(text)) return name;
    const count = (seen.get(text) ?? 0) + 1;
    if (seen.size >= options.max * 4) seen.clear();
    seen.set(text, count);
    if (count < options.after || prepared.size >= options.max) return undefined;
    const made = `plinth_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    prepared.set(text, made);
    return made;
  };
  (client as { query: QueryFn }).query = (...args: unknown[]) => {
    const [text, values, callback] = args;
    // Only Kysely's shape (text and values, a promise); configs, cursors and callbacks pass as they are.
    if (typeof text !== 'string' || !Array.isArray(values) || callback !== undefined) return query(...args);
    const name = named(text);
    if (!name) return query(text, values);
    return (query({ name, text, values }) as Promise<unknown>).catch((error: { code?: string }) => {
      if (error?.code === '0A000') {
        prepared.delete(text);
        refused.add(text);
      }
      throw error;
    });
  };
}
