// stack var list|set|unset: the stack's OpenTofu input variables, plain (its `variables` field) and
// sensitive (write-only: their values are never shown again).

import type { Command } from 'commander';
import { unwrap, type Plinth } from '@plinth/sdk';
import { action, parseVars } from '../command-kit.ts';
import { UsageError } from '../exit-codes.ts';
import type { Session } from '../session.ts';

interface VariableRow {
  name: string;
  sensitive: boolean;
  /** Absent for a sensitive variable. */
  value?: unknown;
}

async function plainOf(plinth: Plinth, id: string): Promise<Record<string, unknown>> {
  return (await unwrap(plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data.variables;
}

async function sensitiveOf(plinth: Plinth, id: string): Promise<string[]> {
  return (await unwrap(plinth.api.GET('/stacks/{id}/sensitive-variables', { params: { path: { id } } }))).data.map((v) => v.name);
}

/**
 * writePlain sends the whole object: PATCH replaces `variables`, so a set or unset reads the current
 * ones, changes its names and writes them back (of two concurrent changes to one stack, the later wins).
 */
async function writePlain(plinth: Plinth, id: string, variables: Record<string, unknown>) {
  await unwrap(plinth.api.PATCH('/stacks/{id}', { params: { path: { id } }, body: { data: { variables } } }));
}

async function list(s: Session, id: string) {
  const [plain, sensitive] = await Promise.all([plainOf(s.plinth, id), sensitiveOf(s.plinth, id)]);
  const rows: VariableRow[] = [
    ...Object.entries(plain).map(([name, value]) => ({ name, sensitive: false, value })),
    ...sensitive.map((name) => ({ name, sensitive: true })),
  ];
  s.out.list(rows, [
    ['NAME', (r) => r.name],
    ['VALUE', (r) => (r.sensitive ? '(sensitive)' : typeof r.value === 'string' ? r.value : JSON.stringify(r.value))],
  ]);
}

export function stackVarCommands(stack: Command) {
  const variable = stack.command('var').description("a stack's OpenTofu input variables");
  variable.command('list <stack>').description('plain variables with their values, sensitive ones by name only').action(action(list));

  variable.command('set <stack> <key=value...>').description('set variables (a value that parses as JSON is JSON, else text)')
    .option('--sensitive', 'write-only: sealed at rest, masked in logs, never shown again')
    .action(action(async (s: Session, id: string, pairs: string[], o: { sensitive?: boolean }) => {
      const vars = parseVars(pairs);
      if (o.sensitive) {
        for (const [name, value] of Object.entries(vars)) {
          await unwrap(s.plinth.api.PUT('/stacks/{id}/sensitive-variables/{name}', { params: { path: { id, name } }, body: { data: { value } } }));
        }
      } else {
        await writePlain(s.plinth, id, { ...(await plainOf(s.plinth, id)), ...vars });
      }
      await list(s, id);
    }));

  variable.command('unset <stack> <name...>').description('remove variables, plain or sensitive')
    .action(action(async (s: Session, id: string, names: string[]) => {
      const [plain, sensitive] = await Promise.all([plainOf(s.plinth, id), sensitiveOf(s.plinth, id)]);
      const missing = names.filter((n) => !(n in plain) && !sensitive.includes(n));
      if (missing.length) throw new UsageError(`stack ${id} has no variable ${missing.join(', ')}`);
      for (const name of names.filter((n) => sensitive.includes(n))) {
        await unwrap(s.plinth.api.DELETE('/stacks/{id}/sensitive-variables/{name}', { params: { path: { id, name } } }));
      }
      if (names.some((n) => n in plain)) await writePlain(s.plinth, id, Object.fromEntries(Object.entries(plain).filter(([k]) => !names.includes(k))));
      await list(s, id);
    }));
}
