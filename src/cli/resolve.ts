// What a person types for a record: its id, its givenId (a module definition's type) or its name. The API
// finds the latter two with the filters of its lists, in the current organization (and project, or the
// environment given, for what lives in one).

import type { Plinth } from '@plinth/sdk';
import { CliExit, EXIT } from './exit-codes.ts';
import { terminalSafe } from './output.ts';

/** Ids are 32 lower-case hex digits; anything else is a givenId or a name. */
const ID = /^[0-9a-f]{32}$/;
const GIVEN_ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,59}$/;
const MODULE_TYPE = /^\S{1,255}$/;

export function looksLikeId(ref: string): boolean {
  return ID.test(ref);
}

/** A record a ref may name. */
export interface Named {
  id: string;
  name: string;
  givenId?: string | null;
  type?: string;
  projectId?: string | null;
  environmentId?: string | null;
}

interface Kind {
  noun: string;
  path: '/projects' | '/environments' | '/stacks' | '/pipelines' | '/code-sources' | '/module-definitions' | '/module-instances';
  /** Looked up within the current project when one is set. */
  inProject: boolean;
  /** Looked up within the environment a command names (`--env`), when it names one. */
  inEnvironment?: boolean;
  /** The unique key tried before the name, when not a givenId: a module definition is named by its type. */
  key?: { filter: 'type'; pattern: RegExp };
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
  moduleDefinition: {
    noun: 'module definition',
    path: '/module-definitions',
    inProject: false,
    key: { filter: 'type', pattern: MODULE_TYPE },
    list: 'plinth module list',
  },
  moduleInstance: { noun: 'module instance', path: '/module-instances', inProject: false, inEnvironment: true, list: 'plinth instance list' },
} as const satisfies Record<string, Kind>;
export type KindName = keyof typeof KINDS;

/** At most this many matches are read: enough to list an ambiguity, never a whole table. */
const MATCH_LIMIT = 20;

async function matching(plinth: Plinth, kind: Kind, filter: Record<string, string>): Promise<Named[]> {
  const page = await plinth.pages(kind.path, { query: { ...filter, limit: MATCH_LIMIT } } as never).next();
  return page.done ? [] : (page.value.data as Named[]);
}

/** Where a ref is looked up: the current project, an environment a command names. */
export interface Scope {
  projectId?: string;
  environmentId?: string;
}

function filterOf(kind: Kind, scope: Scope): Record<string, string> {
  if (kind.inProject && scope.projectId !== undefined) return { projectId: scope.projectId };
  if (kind.inEnvironment && scope.environmentId !== undefined) return { environmentId: scope.environmentId };
  return {};
}

/**
 * resolveRef turns what was typed into the record's id: an id as it is; else the one record whose
 * givenId (or type) it is, else whose name it is. None is exit 4; several is an error that lists them,
 * since acting on a guess could change the wrong thing.
 */
export async function resolveRef(plinth: Plinth, kindName: KindName, ref: string, scope: Scope = {}): Promise<string> {
  if (looksLikeId(ref)) return ref;
  const kind: Kind = KINDS[kindName];
  const filter = filterOf(kind, scope);
  const scoped = Object.keys(filter).length > 0;
  try {
    return await resolveIn(plinth, kind, ref, filter);
  } catch (error) {
    const missed = error instanceof CliExit && error.code === EXIT.NOT_FOUND;
    if (!(missed && scoped && kind.orOrganization)) throw error;
    return resolveIn(plinth, kind, ref, {});
  }
}

async function resolveIn(plinth: Plinth, kind: Kind, ref: string, scope: Record<string, string>): Promise<string> {
  const key = kind.key ?? { filter: 'givenId', pattern: GIVEN_ID };
  if (key.pattern.test(ref)) {
    const byKey = await matching(plinth, kind, { ...scope, [key.filter]: ref });
    if (byKey.length === 1) return byKey[0].id;
    if (byKey.length > 1) throw ambiguous(kind, ref, byKey);
  }
  const byName = ref.length <= 255 ? await matching(plinth, kind, { ...scope, name: ref }) : [];
  if (byName.length === 1) return byName[0].id;
  if (byName.length > 1) throw ambiguous(kind, ref, byName);
  const where = 'projectId' in scope ? ' in the current project' : 'environmentId' in scope ? ' in the environment given' : '';
  throw new CliExit(EXIT.NOT_FOUND, `no ${kind.noun} with the id, ${key.filter} or name "${ref}"${where} (${kind.list})`);
}

function ambiguous(kind: Kind, ref: string, matches: Named[]): CliExit {
  const rows = matches
    .map((m) => {
      const where = m.projectId ? `  (project ${m.projectId})` : m.environmentId ? `  (environment ${m.environmentId})` : '';
      return `\n  ${m.id}  ${terminalSafe((kind.key ? m[kind.key.filter] : m.givenId) ?? '-')}  ${terminalSafe(m.name)}${where}`;
    })
    .join('');
  const narrow = kind.inProject ? ', or narrow it with --project' : kind.inEnvironment ? ', or narrow it with --env' : '';
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
