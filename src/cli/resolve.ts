// What a person types for a record: its id, its givenId or its name. The API finds the latter two with
// the `givenId` and `name` filters of its lists, in the current organization (and project, for what
// lives in one).

import type { Plinth } from '@plinth/sdk';
import { CliExit, EXIT } from './exit-codes.ts';
import { terminalSafe } from './output.ts';

/** Ids are 32 lower-case hex digits; anything else is a givenId or a name. */
const ID = /^[0-9a-f]{32}$/;
const GIVEN_ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,59}$/;

export function looksLikeId(ref: string): boolean {
  return ID.test(ref);
}

/** A record a ref may name. */
export interface Named {
  id: string;
  name: string;
  givenId?: string | null;
  projectId?: string | null;
}

interface Kind {
  noun: string;
  path: '/projects' | '/environments' | '/stacks' | '/pipelines' | '/code-sources';
  /** Looked up within the current project when one is set. */
  inProject: boolean;
  /** Some belong to no project (an organization's pipelines): looked up in the whole organization when the project has none. */
  orOrganization?: boolean;
  /** The command that lists them, for the hint of a miss. */
  list: string;
}

export const KINDS = {
  project: { noun: 'project', path: '/projects', inProject: false, list: 'plinth project list' },
  environment: { noun: 'environment', path: '/environments', inProject: true, list: 'plinth env list' },
  stack: { noun: 'stack', path: '/stacks', inProject: true, list: 'plinth stack list' },
  pipeline: { noun: 'pipeline', path: '/pipelines', inProject: true, orOrganization: true, list: 'plinth pipeline list' },
  codeSource: { noun: 'code source', path: '/code-sources', inProject: false, list: 'plinth code-source list' },
} as const satisfies Record<string, Kind>;
export type KindName = keyof typeof KINDS;

/** At most this many matches are read: enough to list an ambiguity, never a whole table. */
const MATCH_LIMIT = 20;

async function matching(plinth: Plinth, kind: Kind, filter: Record<string, string>): Promise<Named[]> {
  const page = await plinth.pages(kind.path, { query: { ...filter, limit: MATCH_LIMIT } } as never).next();
  return page.done ? [] : (page.value.data as Named[]);
}

/**
 * resolveRef turns what was typed into the record's id: an id as it is; else the one record whose
 * givenId it is, else whose name it is. None is exit 4; several is an error that lists them, since
 * acting on a guess could change the wrong thing.
 */
export async function resolveRef(plinth: Plinth, kindName: KindName, ref: string, projectId?: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const kind: Kind = KINDS[kindName];
  const scoped = kind.inProject && projectId !== undefined;
  try {
    return await resolveIn(plinth, kind, ref, scoped ? { projectId } : {});
  } catch (error) {
    const missed = error instanceof CliExit && error.code === EXIT.NOT_FOUND;
    if (!(missed && scoped && kind.orOrganization)) throw error;
    return resolveIn(plinth, kind, ref, {});
  }
}

async function resolveIn(plinth: Plinth, kind: Kind, ref: string, scope: Record<string, string>): Promise<string> {
  if (GIVEN_ID.test(ref)) {
    const byGivenId = await matching(plinth, kind, { ...scope, givenId: ref });
    if (byGivenId.length === 1) return byGivenId[0].id;
    if (byGivenId.length > 1) throw ambiguous(kind, ref, byGivenId);
  }
  const byName = ref.length <= 255 ? await matching(plinth, kind, { ...scope, name: ref }) : [];
  if (byName.length === 1) return byName[0].id;
  if (byName.length > 1) throw ambiguous(kind, ref, byName);
  const where = 'projectId' in scope ? ' in the current project' : '';
  throw new CliExit(EXIT.NOT_FOUND, `no ${kind.noun} with the id, givenId or name "${ref}"${where} (${kind.list})`);
}

function ambiguous(kind: Kind, ref: string, matches: Named[]): CliExit {
  const rows = matches.map((m) => `\n  ${m.id}  ${m.givenId ?? '-'}  ${terminalSafe(m.name)}${m.projectId ? `  (project ${m.projectId})` : ''}`).join('');
  const narrow = kind.inProject ? ', or narrow it with --project' : '';
  return new CliExit(EXIT.USAGE, `"${ref}" names ${matches.length} ${kind.noun}s: give one's id${narrow}${rows}`);
}

/** resolveOrganization finds one of the caller's organizations by id or exact name. */
export async function resolveOrganization(plinth: Plinth, ref: string): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const matches: Named[] = [];
  for await (const org of plinth.paginate('/organizations', { query: { limit: 200 } })) if (org.name === ref) matches.push(org);
  if (matches.length === 1) return matches[0].id;
  if (matches.length === 0) throw new CliExit(EXIT.NOT_FOUND, `you belong to no organization with the id or name "${ref}" (plinth org list)`);
  const rows = matches.map((m) => `\n  ${m.id}  ${terminalSafe(m.name)}`).join('');
  return Promise.reject(new CliExit(EXIT.USAGE, `"${ref}" names ${matches.length} of your organizations: give one's id${rows}`));
}
