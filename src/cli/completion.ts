// Shell completion generated from the command tree itself, so a new command completes without edits.

import type { Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Node {
  path: string[];
  words: string[];
  options: readonly Option[];
}

const longNames = (options: readonly Option[]) => options.map((o) => o.long).filter((o): o is string => Boolean(o));

/** Every command path with the words that may follow it: subcommands and long options. */
function nodes(command: Command, path: string[] = []): Node[] {
  const subcommands = command.commands.map((c) => c.name());
  return [
    { path, words: [...subcommands, ...longNames(command.options)], options: command.options },
    ...command.commands.flatMap((c) => nodes(c, [...path, c.name()])),
  ];
}

/** Whether an option is followed by a value (`--host <url>`): that word is not a command or a flag. */
const takesValue = (option: Option) => option.required || option.optional;

/** Whether an option's value is a local file (`--value-file <file>`, `-f, --file <file>`): file names complete there. */
const takesFile = (option: Option) => /<file>/.test(option.flags);

/**
 * The long and short spellings of the options that take a value wherever they appear (`-f` is a file
 * for `stack create` but `--follow` for `run logs`: such a flag is left out).
 */
function valuedFlags(program: Command): string[] {
  const valued = new Set<string>();
  const plain = new Set<string>();
  for (const node of nodes(program)) {
    for (const o of node.options) for (const f of [o.long, o.short]) if (f) (takesValue(o) ? valued : plain).add(f);
  }
  return [...valued].filter((f) => !plain.has(f)).sort();
}

function bash(program: Command): string {
  const globals = longNames(program.options).join(' ');
  const cases = nodes(program)
    .map((n) => `    "${n.path.join(' ')}") words="${[...n.words, ...(n.path.length ? [globals] : [])].join(' ')}" ;;`)
    .join('\n');
  // The word after an option that takes a value is that value: it is not part of the command path, and
  // when it is the word being completed, nothing of ours is offered, so bash falls back to file names.
  return `# plinth completion for bash: source <(plinth completion bash)
_plinth() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" word words skip=""
  local valued=" ${valuedFlags(program).join(' ')} "
  case "$valued" in *" $prev "*) COMPREPLY=(); return ;; esac
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    if [ -n "$skip" ]; then skip=""; continue; fi
    case "$word" in
      -*) case "$valued" in *" $word "*) skip=1 ;; esac ;;
      *) path="\${path:+$path }$word" ;;
    esac
  done
  case "$path" in
${cases}
    *) words="${globals}" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _plinth plinth
`;
}

function fishOption(condition: string | undefined, option: Option): string | undefined {
  if (!option.long) return undefined;
  const when = condition ? ` -n '${condition}'` : '';
  const value = takesFile(option) ? ' -r -F' : takesValue(option) ? ' -r' : '';
  return `complete -c plinth${when} -l ${option.long.slice(2)}${value}`;
}

function fish(program: Command): string {
  const lines = ['# plinth completion for fish: plinth completion fish | source', 'complete -c plinth -f'];
  for (const node of nodes(program)) {
    const condition = node.path.length === 0 ? '__fish_use_subcommand' : `__fish_seen_subcommand_from ${node.path[node.path.length - 1]}`;
    const subs = node.words.filter((w) => !w.startsWith('-'));
    if (subs.length) lines.push(`complete -c plinth -n '${condition}' -a '${subs.join(' ')}'`);
    if (node.path.length) for (const option of node.options) lines.push(fishOption(condition, option) ?? '');
  }
  for (const option of program.options) lines.push(fishOption(undefined, option) ?? '');
  return lines.filter(Boolean).join('\n') + '\n';
}

/** completionScript prints the script for `shell`; zsh uses the bash one through bashcompinit. */
export function completionScript(program: Command, shell: Shell): string {
  if (shell === 'fish') return fish(program);
  if (shell === 'zsh') return `# plinth completion for zsh: source <(plinth completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash(program)}`;
  return bash(program);
}
