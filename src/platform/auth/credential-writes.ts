import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
  WithNode,
} from 'kysely';

/** The tables a credential is resolved from: the ones the migrations' notify triggers watch (0008, 0029). */
export const CREDENTIAL_TABLES = ['api_keys', 'users', 'memberships', 'service_accounts', 'organizations', 'cloud_accounts'] as const;

const TABLES = new Set<string>(CREDENTIAL_TABLES);
const WRITE_KINDS = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);
/** Raw SQL that writes one of them; anything else raw is a read or another table's write. */
const RAW_CREDENTIAL_WRITE = new RegExp(
  `\\b(insert\\s+into|update|delete\\s+from|merge\\s+into|truncate(\\s+table)?)\\s+(only\\s+)?"?(${CREDENTIAL_TABLES.join('|')})\\b`,
  'i',
);

/**
 * CredentialWriteWatch counts the statements that write a credential table, as they are sent. The API
 * compares the count at a request's start and at its response: only a request during which one was
 * sent has this process forget its cached credentials before answering (every process hears of the
 * change through NOTIFY too, a few milliseconds later). The count is conservative: a write that rolled
 * back, or one by a concurrent request, counts as well.
 */
export class CredentialWriteWatch implements KyselyPlugin {
  writes = 0;

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    if (writesCredentials(node)) this.writes++;
    return node;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

/**
 * Whether a statement writes a credential table: at its root, in one of its CTEs, or as raw SQL in
 * either place. Nowhere else is needed: PostgreSQL allows a data-changing statement only at the top of
 * a statement or as one of its top-level CTEs, so a subquery, a value or a condition never writes.
 */
export function writesCredentials(root: RootOperationNode): boolean {
  return writesCredentialTable(root) || ctesOf(root).some(writesCredentialTable);
}

function writesCredentialTable(node: OperationNode): boolean {
  if (node.kind === 'RawNode') return RAW_CREDENTIAL_WRITE.test((node as unknown as { sqlFragments: readonly string[] }).sqlFragments.join(' '));
  return WRITE_KINDS.has(node.kind) && targetTables(node).some((name) => TABLES.has(name));
}

function ctesOf(root: OperationNode): OperationNode[] {
  const withNode = (root as { with?: WithNode }).with;
  return withNode ? withNode.expressions.map((cte) => cte.expression) : [];
}

/** The tables a write node changes: its `into` (insert, merge), `table` (update) or `from` (delete). */
function targetTables(node: OperationNode): string[] {
  const target = (node as unknown as Record<string, OperationNode | undefined>)[
    node.kind === 'UpdateQueryNode' ? 'table' : node.kind === 'DeleteQueryNode' ? 'from' : 'into'
  ];
  const names: string[] = [];
  const collect = (n: OperationNode) => {
    if (n.kind === 'TableNode') names.push((n as unknown as { table: { identifier: { name: string } } }).table.identifier.name);
    else childrenOf(n).forEach(collect);
  };
  if (target) collect(target);
  return names;
}

function childrenOf(node: OperationNode): OperationNode[] {
  const children: OperationNode[] = [];
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) children.push(item);
    } else if (isNode(value)) children.push(value);
  }
  return children;
}

function isNode(value: unknown): value is OperationNode {
  return typeof value === 'object' && value !== null && typeof (value as { kind?: unknown }).kind === 'string';
}
