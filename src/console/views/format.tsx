// Small pieces every console page uses: status badges, times, ids.

/** A status as a badge whose colour is not the only thing that tells it: the word is there too. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status.replaceAll('_', ' ').toLowerCase()}</span>;
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "3 minutes ago", with the exact UTC time on hover and for assistive technology. */
export function When({ at, now = Date.now() }: { at?: string | null; now?: number }) {
  if (!at) return <span class="muted">—</span>;
  const ms = new Date(at).getTime() - now;
  const [unit, size] = UNITS.find(([, size]) => Math.abs(ms) >= size) ?? UNITS[UNITS.length - 1];
  return (
    <time datetime={at} title={at}>
      {relative.format(Math.round(ms / size), unit)}
    </time>
  );
}

/** The first characters of an id, enough to tell runs apart on a page; the whole id is in the title. */
export function ShortId({ id }: { id: string }) {
  return (
    <code title={id} class="mono">
      {id.slice(-8)}
    </code>
  );
}

/** `path` with the fields of `query` that hold something as its query string: a page's shareable URL. */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const text = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => Boolean(e[1]))).toString();
  return text ? `${path}?${text}` : path;
}
