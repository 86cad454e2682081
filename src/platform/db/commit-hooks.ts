// What a transaction does at its COMMIT, whoever opened it: statements that must share it (the audit
// row of a request) run just before it, and callbacks that may only see committed work (metrics that
// count a run's transitions) run just after it. A rolled-back transaction, a retried one included,
// runs neither, so nothing is recorded or counted twice.
//
// It lives in the driver because services open their own transactions (`db.transaction().execute`):
// the driver sees every BEGIN and COMMIT without any service being written for it.

import { CompiledQuery, RawNode, type DatabaseConnection, type Driver, type QueryCompiler, type QueryResult, type TransactionSettings } from 'kysely';

/** A participant in every transaction's commit; registered once per process by the module that needs it. */
export interface CommitHook {
  /** Whether a write run outside any transaction should get one, so that beforeCommit can join it. */
  pending(): boolean;
  /**
   * Runs on the transaction's connection just before COMMIT; a failure rolls the whole transaction
   * back. `wrote`: the transaction changed something (a read-only one may not need the hook).
   */
  beforeCommit(connection: DatabaseConnection, wrote: boolean): Promise<void>;
  /** Sees each write statement of a pending transaction, before it runs. */
  observeWrite?(query: CompiledQuery): void;
}

const hooks: CommitHook[] = [];

/** registerCommitHook adds a hook to every transaction of every database of this process. */
export function registerCommitHook(hook: CommitHook): void {
  hooks.push(hook);
}

const AFTER_COMMIT = Symbol('plinth.afterCommit');
type AfterCommitQuery = CompiledQuery & { [AFTER_COMMIT]: () => void };

/**
 * afterCommit returns a statement that, executed on a transaction (`trx.executeQuery(afterCommit(fn))`),
 * makes `fn` run once that transaction commits, and never if it rolls back. It never reaches the server:
 * the driver takes it off the connection it was executed on. Outside a transaction `fn` runs at once.
 */
export function afterCommit(fn: () => void): CompiledQuery {
  const query: AfterCommitQuery = { query: RawNode.createWithSql(''), queryId: { queryId: 'after-commit' }, sql: '', parameters: [], [AFTER_COMMIT]: fn };
  return query;
}

const WRITE_KINDS = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);
/** Raw SQL that may change something: a data-changing statement, a CTE, or a job added to the queue. */
const RAW_WRITE = /^\s*(insert|update|delete|merge|with)\b|add_job\(/i;

function isWrite(query: CompiledQuery): boolean {
  if (WRITE_KINDS.has(query.query.kind)) return true;
  return query.query.kind === 'RawNode' && RAW_WRITE.test(query.sql);
}
const NO_ROWS: QueryResult<never> = { rows: [] };

/** Whether a write statement changed (or returned) any row: an update of nothing changed nothing. */
function changed(result: QueryResult<unknown>): boolean {
  return (result.numAffectedRows ?? 0n) > 0n || result.rows.length > 0;
}

class HookedConnection implements DatabaseConnection {
  inTransaction = false;
  /** The open transaction ran a statement that may have changed something. */
  wrote = false;
  after: (() => void)[] = [];

  constructor(readonly inner: DatabaseConnection) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const callback = (query as Partial<AfterCommitQuery>)[AFTER_COMMIT];
    if (callback) {
      if (this.inTransaction) this.after.push(callback);
      else runAfter([callback]);
      return NO_ROWS;
    }
    if (!isWrite(query)) return this.inner.executeQuery<R>(query);
    const pending = hooks.filter((h) => h.pending());
    for (const h of pending) h.observeWrite?.(query);
    if (!this.inTransaction && pending.length > 0) return this.inOwnTransaction<R>(query);
    const result = await this.inner.executeQuery<R>(query);
    if (this.inTransaction && changed(result)) this.wrote = true;
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }

  /** A lone write that a hook must join: BEGIN, the write, the hooks (if it changed anything), COMMIT, as one transaction. */
  private async inOwnTransaction<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    await this.inner.executeQuery(CompiledQuery.raw('begin'));
    try {
      const result = await this.inner.executeQuery<R>(query);
      await runBefore(this.inner, changed(result));
      await this.inner.executeQuery(CompiledQuery.raw('commit'));
      return result;
    } catch (error) {
      await this.inner.executeQuery(CompiledQuery.raw('rollback')).catch(() => {});
      throw error;
    }
  }
}

async function runBefore(connection: DatabaseConnection, wrote: boolean): Promise<void> {
  for (const h of hooks) if (h.pending()) await h.beforeCommit(connection, wrote);
}

function runAfter(callbacks: (() => void)[]): void {
  // A metric's failure must not turn a committed change into an error for its caller.
  for (const fn of callbacks) {
    try {
      fn();
    } catch {}
  }
}

const unwrap = (c: DatabaseConnection) => (c instanceof HookedConnection ? c.inner : c);

/** HookedDriver wraps a Kysely driver so that every transaction runs the registered hooks. */
export class HookedDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init() {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new HookedConnection(await this.inner.acquireConnection());
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    await this.inner.beginTransaction(unwrap(connection), settings);
    if (connection instanceof HookedConnection) {
      connection.inTransaction = true;
      connection.wrote = false;
      connection.after = [];
    }
  }

  async commitTransaction(connection: DatabaseConnection) {
    await runBefore(unwrap(connection), connection instanceof HookedConnection ? connection.wrote : true);
    await this.inner.commitTransaction(unwrap(connection));
    if (connection instanceof HookedConnection) {
      connection.inTransaction = false;
      runAfter(connection.after.splice(0));
    }
  }

  async rollbackTransaction(connection: DatabaseConnection) {
    if (connection instanceof HookedConnection) {
      connection.inTransaction = false;
      connection.after = [];
    }
    await this.inner.rollbackTransaction(unwrap(connection));
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.inner.savepoint!(unwrap(connection), name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.inner.rollbackToSavepoint!(unwrap(connection), name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.inner.releaseSavepoint!(unwrap(connection), name, compile);
  }

  releaseConnection(connection: DatabaseConnection) {
    return this.inner.releaseConnection(unwrap(connection));
  }

  destroy() {
    return this.inner.destroy();
  }
}
