// Which requests the audit log records, and under what name, derived from the route table so that a
// route added later is audited without anyone writing it down: every route that is not a GET, and a
// GET that declares `config.audit` (a read of sensitive data, such as a state download).

/** What the audit log records of one route. */
export interface AuditSpec {
  /** e.g. `project.create`, `run.approve`, `state.download`. */
  action: string;
  /** The kind of resource, e.g. `project`, `pipeline-run`. */
  resourceType: string;
  /** The table a create inserts into (`projects`): its new row's id becomes the audit row's resource id. */
  table: string;
}

const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

/** `pipeline-runs` → `pipeline-run`; `policies` → `policy`; `auth` stays. */
export function singular(plural: string): string {
  if (plural.endsWith('ies')) return `${plural.slice(0, -3)}y`;
  if (plural.endsWith('s') && !plural.endsWith('ss')) return plural.slice(0, -1);
  return plural;
}

/**
 * auditSpecOf names a route's audited action, or undefined when the route is not audited. Defaults:
 * `POST /projects` → `project.create`, `PATCH|PUT /projects/:id` → `project.update`, `DELETE` →
 * `project.delete`, `POST /pipeline-runs/:id/cancel` → `pipeline-run.cancel`. A route's `config.audit`
 * names it instead (a string), or takes it out of the log (`false`).
 */
export function auditSpecOf(method: string, url: string, declared: string | false | undefined): AuditSpec | undefined {
  if (declared === false) return undefined;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') {
    if (typeof declared !== 'string') return undefined;
  }
  const segments = url.split('?')[0].split('/').filter(Boolean);
  const first = segments[0] ?? 'root';
  const resourceType = singular(first);
  const table = first.replaceAll('-', '_');
  if (typeof declared === 'string') return { action: declared, resourceType, table };
  const last = segments.at(-1) ?? first;
  const verb = segments.length > 1 && !last.startsWith(':') ? last : (VERBS[method] ?? method.toLowerCase());
  return { action: `${resourceType}.${verb}`, resourceType, table };
}
