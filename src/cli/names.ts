// The names tables show in place of the ids records point at (a stack's project and environment, a
// run's stack): each read once per invocation, and the id itself when it cannot be read.

import type { Plinth } from '@plinth/sdk';

type Labelled = 'project' | 'environment' | 'stack' | 'pipeline';

/** Requests in flight at once while labelling a table. */
const AT_ONCE = 8;

export class NameBook {
  private readonly cache = new Map<string, Promise<string>>();

  constructor(private readonly plinth: Plinth) {}

  /** The givenId (or name) of the record `id` points at, for a table cell. */
  label(kind: Labelled, id: string | null | undefined): Promise<string> {
    if (!id) return Promise.resolve('');
    const key = `${kind}:${id}`;
    let label = this.cache.get(key);
    if (!label) {
      label = this.read(kind, id).catch(() => id);
      this.cache.set(key, label);
    }
    return label;
  }

  /** labels reads the labels of the rows' references, a few at a time: a long list asks the API no more than that at once. */
  async labels<T>(rows: T[], kind: Labelled, idOf: (row: T) => string | null | undefined): Promise<Map<string, string>> {
    const ids = [...new Set(rows.map(idOf).filter((id): id is string => Boolean(id)))];
    const labels = new Map<string, string>();
    for (let i = 0; i < ids.length; i += AT_ONCE) {
      const batch = ids.slice(i, i + AT_ONCE);
      const read = await Promise.all(batch.map((id) => this.label(kind, id)));
      batch.forEach((id, j) => labels.set(id, read[j]));
    }
    return labels;
  }

  private async read(kind: Labelled, id: string): Promise<string> {
    const params = { params: { path: { id } } };
    const answer =
      kind === 'project'
        ? await this.plinth.api.GET('/projects/{id}', params)
        : kind === 'environment'
          ? await this.plinth.api.GET('/environments/{id}', params)
          : kind === 'stack'
            ? await this.plinth.api.GET('/stacks/{id}', params)
            : await this.plinth.api.GET('/pipelines/{id}', params);
    const record = answer.data?.data as { givenId?: string | null; name: string } | undefined;
    return record ? record.givenId || record.name : id;
  }
}
