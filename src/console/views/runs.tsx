import { ShortId, StatusBadge, When, withQuery } from './format.tsx';

export interface RunRow {
  id: string;
  status: string;
  description?: string;
  action?: string | null;
  attachedEntityId?: string | null;
  createdById?: string | null;
  createdAt: string;
}

/** The inbox's filters, each a link with its own URL: what the page shows can be shared. */
export const RUN_FILTERS = [
  { label: 'All', status: undefined },
  { label: 'Needs approval', status: 'WAITING_FOR_APPROVAL' },
  { label: 'Running', status: 'RUNNING' },
  { label: 'Queued', status: 'QUEUED' },
  { label: 'Failed', status: 'FAILED' },
  { label: 'Succeeded', status: 'SUCCEEDED' },
  { label: 'Cancelled', status: 'CANCELLED' },
] as const;

/** The inbox's filters, as its URL's query string holds them. */
export interface RunFilter {
  status?: string;
  stackId?: string;
  environmentId?: string;
  createdById?: string;
  /** The Git branch or tag the runs' stacks track. */
  ref?: string;
  /** A commit SHA or its first hex digits. */
  commitSha?: string;
}

export interface RunsInboxProps {
  orgPath: string;
  runs: RunRow[];
  stackNames: Map<string, string>;
  environments: { id: string; name: string }[];
  filter: RunFilter;
  /** The viewer's own id, for "Started by me". */
  viewerId: string;
  /** The organization's members by user id (name or email): who started each run, and whom to filter by. */
  people: Record<string, string>;
  nextCursor?: string;
  /** The first page follows new runs and changes of status through this event stream. */
  liveUrl?: string;
}

/** The inbox's URL (or `path` beside it) with `change` applied to the current filters. */
export function inboxLink(orgPath: string, filter: RunFilter, change: Partial<RunFilter & { cursor: string; v: string }> = {}, path = '/runs') {
  return withQuery(`${orgPath}${path}`, { ...filter, ...change });
}

export function RunsInbox(props: RunsInboxProps) {
  const { orgPath, stackNames, environments, filter, viewerId, liveUrl, people } = props;
  const { status, stackId, environmentId, createdById, ref, commitSha } = filter;
  const link = (change: Partial<RunFilter & { cursor: string }>) => inboxLink(orgPath, filter, change);
  return (
    <>
      <h1>Runs</h1>
      <ul class="filters" aria-label="Filter by status">
        {RUN_FILTERS.map((choice) => (
          <li key={choice.label}>
            <a href={link({ status: choice.status })} aria-current={choice.status === status ? 'page' : undefined}>
              {choice.label}
            </a>
          </li>
        ))}
        <li>
          <a href={link({ createdById: createdById ? undefined : viewerId })} aria-current={createdById === viewerId ? 'page' : undefined}>
            Started by me
          </a>
        </li>
        {stackId && (
          <li>
            <a href={link({ stackId: undefined })}>Stack: {stackNames.get(stackId) ?? stackId} ✕</a>
          </li>
        )}
      </ul>
      <form method="get" action={`${orgPath}/runs`} class="filter-form">
        {status && <input type="hidden" name="status" value={status} />}
        {stackId && <input type="hidden" name="stackId" value={stackId} />}
        <div>
          <label for="environment-filter">Environment</label>
          <select id="environment-filter" name="environmentId">
            <option value="">Every environment</option>
            {environments.map((environment) => (
              <option key={environment.id} value={environment.id} selected={environment.id === environmentId}>
                {environment.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="actor-filter">Started by</label>
          <select id="actor-filter" name="createdById">
            <option value="">Anyone</option>
            {createdById && !people[createdById] && (
              <option value={createdById} selected>
                {createdById}
              </option>
            )}
            {Object.entries(people).map(([id, name]) => (
              <option key={id} value={id} selected={id === createdById}>
                {id === viewerId ? `${name} (you)` : name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="ref-filter">Branch or tag</label>
          <input id="ref-filter" type="text" name="ref" value={ref ?? ''} maxLength={255} />
        </div>
        <div>
          <label for="commit-filter">Commit</label>
          <input id="commit-filter" type="text" name="commitSha" value={commitSha ?? ''} maxLength={40} pattern="[0-9a-f]{4,40}" />
        </div>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
      {liveUrl ? (
        <div hx-ext="sse" sse-connect={liveUrl} sse-swap="runs">
          <RunsTable {...props} />
        </div>
      ) : (
        <RunsTable {...props} />
      )}
    </>
  );
}

/** The inbox's runs and the link to older ones: the part a live inbox swaps in as runs come and change. */
export function RunsTable({ orgPath, runs, stackNames, filter, nextCursor, people, viewerId }: RunsInboxProps) {
  const link = (change: Partial<RunFilter & { cursor: string }>) => inboxLink(orgPath, filter, change);
  return (
    <>
      {runs.length === 0 ? (
        <p class="muted">No runs match.</p>
      ) : (
        <table>
          <caption class="skip-link">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Stack</th>
              <th scope="col">Description</th>
              <th scope="col">Started by</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.id}>
                <td>
                  <a href={`${orgPath}/runs/${run.id}`}>
                    <ShortId id={run.id} />
                  </a>
                </td>
                <td>
                  <StatusBadge status={run.status} />
                </td>
                <td>
                  {run.attachedEntityId ? (
                    <a href={link({ stackId: run.attachedEntityId })}>{stackNames.get(run.attachedEntityId) ?? run.attachedEntityId}</a>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>{run.description || <span class="muted">{run.action ?? ''}</span>}</td>
                <td>
                  {run.createdById ? (
                    <a href={link({ createdById: run.createdById })}>{run.createdById === viewerId ? 'you' : (people[run.createdById] ?? run.createdById)}</a>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>
                  <When at={run.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {nextCursor && (
        <p class="pager">
          <a href={link({ cursor: nextCursor })}>Older runs →</a>
        </p>
      )}
    </>
  );
}
