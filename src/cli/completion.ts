// Shell completion. The scripts are small: at each Tab they ask `plinth __complete <words>`, which walks
// the command tree itself (so a new command completes without edits) and offers subcommands, options,
// enum values, context names, and the names and ids of the records an argument takes, read from the API.

import type { Argument, Command, Option } from 'commander';
import { ConfigStore } from './config.ts';
import { METHODS, MODULE_DEFINITION_STATUSES, RUN_STATUSES } from './enums.ts';
import { OUTPUT_FORMATS } from './output.ts';
import type { Session } from './session.ts';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** The hidden command the scripts call. */
export const COMPLETE_COMMAND = '__complete';

/** A lookup of candidates that may need the API; it fails quietly (a Tab never prints an error). */
type Source = (s: Session) => Promise<string[]>;

/** How long a Tab may wait for the API before offering nothing. */
const API_TIMEOUT_MS = 1500;

/**
 * What a Tab may put on a command line: words the shell reads as they are. A name another member chose
 * could hold `$(…)`, a glob or an escape sequence, so a record whose givenId or name is anything else is
 * offered by its id.
 */
const SHELL_SAFE = /^[A-Za-z0-9._:@/+=,-]+$/;

function typeable(item: { id: string; givenId?: string | null; name: string }, label = item.givenId || item.name): string {
  return SHELL_SAFE.test(label) ? label : item.id;
}

async function names(
  s: Session,
  path: '/projects' | '/environments' | '/stacks' | '/pipelines' | '/code-sources' | '/module-instances',
  inProject: boolean,
): Promise<string[]> {
  const projectId = inProject ? await s.project() : undefined;
  const page = await s.plinth.pages(path, { query: { ...(projectId ? { projectId } : {}), order: 'desc', limit: 100 } } as never).next();
  const items = (page.done ? [] : page.value.data) as { id: string; givenId?: string | null; name: string }[];
  return items.map((item) => typeable(item));
}

/** Module definitions, by type (what names one where others have a givenId). */
async function definitions(s: Session): Promise<string[]> {
  const page = await s.plinth.pages('/module-definitions', { query: { order: 'desc', limit: 100 } }).next();
  return page.done ? [] : page.value.data.map((d) => typeable(d, d.type));
}

const RECORDS: Record<string, Source> = {
  project: (s) => names(s, '/projects', false),
  env: (s) => names(s, '/environments', true),
  stack: (s) => names(s, '/stacks', true),
  pipeline: (s) => names(s, '/pipelines', true),
  source: (s) => names(s, '/code-sources', false),
  'code-source': (s) => names(s, '/code-sources', false),
  definition: definitions,
  module: definitions,
  instance: (s) => names(s, '/module-instances', false),
  'module-version': async (s) => {
    const page = await s.plinth.pages('/module-versions', { query: { order: 'desc', limit: 20 } }).next();
    return page.done ? [] : page.value.data.map((v) => v.id);
  },
  org: async (s) => {
    const page = await s.plinth.pages('/organizations', { query: { limit: 100 } }).next();
    return page.done ? [] : page.value.data.map((o) => typeable(o));
  },
  key: async (s) => {
    const page = await s.plinth.pages('/api-keys', { query: { order: 'desc', limit: 100 } }).next();
    return page.done ? [] : page.value.data.filter((k) => !k.revokedAt).map((k) => typeable(k));
  },
  run: async (s) => {
    const page = await s.plinth.pages('/pipeline-runs', { query: { order: 'desc', limit: 20 } }).next();
    return page.done ? [] : page.value.data.map((r) => r.id);
  },
};

const FIXED: Record<string, string[]> = {
  output: [...OUTPUT_FORMATS],
  status: [...RUN_STATUSES],
  sort: ['newest', 'oldest'],
  shell: [...SHELLS],
  method: [...METHODS],
};

/** Fixed sets an option takes in one command only, by the command's path: `module list --status`. */
const FIXED_IN: Record<string, Record<string, string[]>> = {
  'module list': { status: [...MODULE_DEFINITION_STATUSES] },
};

function pathOf(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** What a value of `--<name>` or an argument `<name>` of `command` can be. */
function valuesOf(name: string, store: ConfigStore, command?: Command): Source | undefined {
  const fixed = (command && FIXED_IN[pathOf(command)]?.[name]) ?? FIXED[name];
  if (fixed) return async () => fixed;
  if (name === 'context' || name === 'name-of-context') return async () => Object.keys(store.read().contexts);
  return RECORDS[name];
}

const takesValue = (option: Option) => option.required || option.optional;

function optionNamed(command: Command, word: string): Option | undefined {
  for (let c: Command | null = command; c; c = c.parent) {
    const found = c.options.find((o) => o.long === word || o.short === word);
    if (found) return found;
  }
  return undefined;
}

function allOptions(command: Command): Option[] {
  const out: Option[] = [];
  for (let c: Command | null = command; c; c = c.parent) out.push(...c.options);
  return out;
}

/** Where the words typed so far lead: the command, the positional arguments given, and what the last word is the value of. */
function walk(program: Command, words: string[]) {
  let command = program;
  let positional = 0;
  let awaitingValue: Option | undefined;
  for (const word of words) {
    if (awaitingValue) {
      awaitingValue = undefined;
      continue;
    }
    if (word.startsWith('-')) {
      const option = optionNamed(command, word.split('=')[0]);
      if (option && takesValue(option) && !word.includes('=')) awaitingValue = option;
      continue;
    }
    const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub && positional === 0) command = sub;
    else positional++;
  }
  return { command, positional, awaitingValue };
}

/** commandOf is the command the words of a command line lead to (the program itself for none). */
export function commandOf(program: Command, words: string[]): Command {
  return walk(program, words).command;
}

/** The argument a positional word fills (the last one takes every further word when variadic). */
function argumentAt(command: Command, index: number): Argument | undefined {
  const args = command.registeredArguments;
  if (index < args.length) return args[index];
  const last = args[args.length - 1];
  return last?.variadic ? last : undefined;
}

/**
 * completions lists what may come next after `words` (the words after `plinth`, the last one being
 * typed, possibly empty), filtered by what that last word starts with.
 */
export async function completions(program: Command, words: string[], session: () => Session, store = new ConfigStore()): Promise<string[]> {
  const current = words[words.length - 1] ?? '';
  const { command, positional, awaitingValue } = walk(program, words.slice(0, -1));
  let source: Source | undefined;
  if (awaitingValue) {
    source = valuesOf(
      awaitingValue
        .attributeName()
        .replace(/([A-Z])/g, '-$1')
        .toLowerCase(),
      store,
      command,
    );
    if (!source && awaitingValue.long === '--context') source = valuesOf('context', store);
  } else if (current.startsWith('-')) {
    source = async () => allOptions(command).flatMap((o) => (o.long ? [o.long] : []));
  } else if (command.commands.length > 0 && positional === 0) {
    source = async () => command.commands.filter((c) => c.name() !== COMPLETE_COMMAND).map((c) => c.name());
  } else {
    const argument = argumentAt(command, positional);
    const name = argument?.name();
    if (name === 'name' && command.name() === 'use') source = valuesOf('context', store);
    else if (name) source = valuesOf(name, store, command);
  }
  if (!source) return [];
  const offered = await Promise.race([
    Promise.resolve()
      .then(() => source(session()))
      .catch(() => [] as string[]),
    new Promise<string[]>((resolve) => setTimeout(() => resolve([]), API_TIMEOUT_MS).unref()),
  ]);
  const wanted = current.toLowerCase();
  return [...new Set(offered)].filter((word) => SHELL_SAFE.test(word) && word.toLowerCase().startsWith(wanted));
}

const BASH = `# plinth completion for bash: source <(plinth completion bash)
_plinth() {
  local IFS=$'\\n'
  COMPREPLY=($(plinth ${COMPLETE_COMMAND} "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _plinth plinth
`;

const FISH = `# plinth completion for fish: plinth completion fish | source
function __plinth_complete
  set -l words (commandline -opc) (commandline -ct)
  plinth ${COMPLETE_COMMAND} $words[2..-1] 2>/dev/null
end
complete -c plinth -a '(__plinth_complete)'
`;

/** completionScript prints the script for `shell`; zsh uses the bash one through bashcompinit. */
export function completionScript(shell: Shell): string {
  if (shell === 'fish') return FISH;
  if (shell === 'zsh') return `# plinth completion for zsh: source <(plinth completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${BASH}`;
  return BASH;
}
