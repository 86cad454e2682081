import { ShortId, StatusBadge, When } from './format.tsx';

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

export interface RunsInboxProps {
  orgPath: string;
  runs: RunRow[];
  stackNames: Map<string, string>;
  status?: string;
  stackId?: string;
  nextCursor?: string;
}

export function RunsInbox({ orgPath, runs, stackNames, status, stackId, nextCursor }: RunsInboxProps) {
  const link = (query: Record<string, string | undefined>) => {
    const params = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => Boolean(e[1])));
    const text = params.toString();
    return `${orgPath}/runs${text ? `?${text}` : ''}`;
  };
  return (
    <>
      <h1>Runs</h1>
      <ul class="filters" aria-label="Filter by status">
        {RUN_FILTERS.map((filter) => (
          <li key={filter.label}>
            <a href={link({ status: filter.status, stackId })} aria-current={filter.status === status ? 'page' : undefined}>
              {filter.label}
            </a>
          </li>
        ))}
        {stackId && (
          <li>
            <a href={link({ status })}>Stack: {stackNames.get(stackId) ?? stackId} ✕</a>
          </li>
        )}
      </ul>
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
                    <a href={link({ status, stackId: run.attachedEntityId })}>{stackNames.get(run.attachedEntityId) ?? run.attachedEntityId}</a>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>{run.description || <span class="muted">{run.action ?? ''}</span>}</td>
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
          <a href={`${link({ status, stackId })}${status || stackId ? '&' : '?'}cursor=${encodeURIComponent(nextCursor)}`}>Older runs →</a>
        </p>
      )}
    </>
  );
}
