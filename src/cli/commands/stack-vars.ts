// stack var list|set|unset: the stack's OpenTofu input variables, plain (its `variables` field) and
// sensitive (write-only: their values are never shown again).

import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { unwrap, type Plinth } from '@plinth/sdk';
import { action, parseVars } from '../command-kit.ts';
import { UsageError } from '../exit-codes.ts';
import { readSecret } from '../prompt.ts';
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

interface SetOptions {
  sensitive?: boolean;
  valueFile?: string;
}

const SENSITIVE_USAGE = 'plinth stack var set <stack> <name> --sensitive --value-file <file> (or --value-file - to read standard input)';

/**
 * variablesToSet reads what `var set` was given. A sensitive value never comes from the command line:
 * every process on the machine can read another's arguments (ps, /proc/<pid>/cmdline), and shells keep
 * them in their history. It comes from a file or standard input instead.
 */
async function variablesToSet(args: string[], o: SetOptions): Promise<Record<string, unknown>> {
  if (o.valueFile === undefined) {
    if (o.sensitive && args.some((a) => a.includes('=')))
      throw new UsageError(`a sensitive value is never taken from the command line, where ps and shell history show it: ${SENSITIVE_USAGE}`);
    if (o.sensitive) throw new UsageError(`--sensitive takes its value from --value-file: ${SENSITIVE_USAGE}`);
    return parseVars(args);
  }
  const [name, ...rest] = args;
  if (rest.length || name.includes('=')) throw new UsageError(`--value-file sets one variable: give its name alone (${SENSITIVE_USAGE})`);
  return { [name]: await readValue(o.valueFile, name) };
}

/**
 * readValue reads a variable's value as text: a file, standard input when piped, or a prompt that does
 * not echo when standard input is a terminal. One final newline is dropped (what `echo` and editors add).
 */
async function readValue(file: string, name: string): Promise<string> {
  let text: string;
  if (file === '-' && process.stdin.isTTY) {
    text = await readSecret(`value of ${name} (not echoed): `);
  } else {
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
    }
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new UsageError(`${file === '-' ? 'standard input' : file} holds no value for ${name}`);
  return value;
}

export function stackVarCommands(stack: Command) {
  const variable = stack.command('var').description("a stack's OpenTofu input variables");
  variable
    .command('list <stack>')
    .description('plain variables with their values, sensitive ones by name only')
    .action(action(async (s: Session, ref: string) => list(s, await s.resolve('stack', ref))));

  variable
    .command('set <stack> <vars...>')
    .description('set variables from key=value pairs (a value that parses as JSON is JSON, else text), or one variable from --value-file')
    .option('--sensitive', 'write-only: sealed at rest, masked in logs, never shown again; its value comes from --value-file, never the command line')
    .option('--value-file <file>', 'the value of the one variable named, as text (one final newline dropped); - reads standard input')
    .action(
      action(async (s: Session, ref: string, args: string[], o: SetOptions) => {
        const vars = await variablesToSet(args, o);
        const id = await s.resolve('stack', ref);
        if (o.sensitive) {
          for (const [name, value] of Object.entries(vars)) {
            await unwrap(s.plinth.api.PUT('/stacks/{id}/sensitive-variables/{name}', { params: { path: { id, name } }, body: { data: { value } } }));
          }
        } else {
          await writePlain(s.plinth, id, { ...(await plainOf(s.plinth, id)), ...vars });
        }
        await list(s, id);
      }),
    );

  variable
    .command('unset <stack> <name...>')
    .description('remove variables, plain or sensitive')
    .action(
      action(async (s: Session, ref: string, names: string[]) => {
        const id = await s.resolve('stack', ref);
        const [plain, sensitive] = await Promise.all([plainOf(s.plinth, id), sensitiveOf(s.plinth, id)]);
        const missing = names.filter((n) => !(n in plain) && !sensitive.includes(n));
        if (missing.length) throw new UsageError(`stack ${ref} has no variable ${missing.join(', ')}`);
        for (const name of names.filter((n) => sensitive.includes(n))) {
          await unwrap(s.plinth.api.DELETE('/stacks/{id}/sensitive-variables/{name}', { params: { path: { id, name } } }));
        }
        if (names.some((n) => n in plain)) await writePlain(s.plinth, id, Object.fromEntries(Object.entries(plain).filter(([k]) => !names.includes(k))));
        await list(s, id);
      }),
    );
}
