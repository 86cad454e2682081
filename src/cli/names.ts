// The names tables show in place of the ids records point at (a stack's project and environment, a
// run's stack): each read once per invocation, and the id itself when it cannot be read.

import type { Plinth } from '@plinth/sdk';

type Labelled = 'project' | 'environment' | 'stack' | 'pipeline';

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

  /** labels reads the labels of every row's reference at once, so a table waits for one round of requests. */
  async labels<T>(rows: T[], kind: Labelled, idOf: (row: T) => string | null | undefined): Promise<Map<string, string>> {
    const ids = [...new Set(rows.map(idOf).filter((id): id is string => Boolean(id)))];
    const labels = await Promise.all(ids.map((id) => this.label(kind, id)));
    return new Map(ids.map((id, i) => [id, labels[i]]));
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
