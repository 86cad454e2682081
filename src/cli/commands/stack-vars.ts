// stack var list|set|unset: the stack's OpenTofu input variables (its `variables` field).

import type { Command } from 'commander';
import { unwrap, type Plinth } from '@plinth/sdk';
import { action, parseVars } from '../command-kit.ts';
import { UsageError } from '../exit-codes.ts';
import type { Session } from '../session.ts';

interface VariableRow {
  name: string;
  value: unknown;
}

async function variablesOf(plinth: Plinth, id: string): Promise<Record<string, unknown>> {
  return (await unwrap(plinth.api.GET('/stacks/{id}', { params: { path: { id } } }))).data.variables;
}

/**
 * writeVariables sends the whole object: PATCH replaces `variables`, so a set or unset reads the
 * current ones, changes its names and writes them back (two people changing one stack's variables at
 * the same moment: the later write wins).
 */
async function writeVariables(plinth: Plinth, id: string, variables: Record<string, unknown>): Promise<Record<string, unknown>> {
  return (await unwrap(plinth.api.PATCH('/stacks/{id}', { params: { path: { id } }, body: { data: { variables } } }))).data.variables;
}

function print(s: Session, variables: Record<string, unknown>) {
  const rows: VariableRow[] = Object.entries(variables).map(([name, value]) => ({ name, value }));
  s.out.list(rows, [['NAME', (r) => r.name], ['VALUE', (r) => (typeof r.value === 'string' ? r.value : JSON.stringify(r.value))]]);
}

export function stackVarCommands(stack: Command) {
  const variable = stack.command('var').description("a stack's OpenTofu input variables");
  variable.command('list <stack>').action(action(async (s: Session, id: string) => print(s, await variablesOf(s.plinth, id))));

  variable.command('set <stack> <key=value...>').description('set variables (a value that parses as JSON is JSON, else text)')
    .action(action(async (s: Session, id: string, pairs: string[]) => {
      const current = await variablesOf(s.plinth, id);
      print(s, await writeVariables(s.plinth, id, { ...current, ...parseVars(pairs) }));
    }));

  variable.command('unset <stack> <name...>').description('remove variables')
    .action(action(async (s: Session, id: string, names: string[]) => {
      const current = await variablesOf(s.plinth, id);
      const missing = names.filter((n) => !(n in current));
      if (missing.length) throw new UsageError(`stack ${id} has no variable ${missing.join(', ')}`);
      print(s, await writeVariables(s.plinth, id, Object.fromEntries(Object.entries(current).filter(([k]) => !names.includes(k)))));
    }));
}
