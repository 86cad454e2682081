// Shell completion generated from the command tree itself, so a new command completes without edits.

import type { Command } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Node {
  path: string[];
  words: string[];
}

/** Every command path with the words that may follow it: subcommands and long options. */
function nodes(command: Command, path: string[] = []): Node[] {
  const subcommands = command.commands.map((c) => c.name());
  const options = command.options.map((o) => o.long).filter((o): o is string => Boolean(o));
  return [{ path, words: [...subcommands, ...options] }, ...command.commands.flatMap((c) => nodes(c, [...path, c.name()]))];
}

function bash(program: Command): string {
  const globals = program.options.map((o) => o.long).filter(Boolean).join(' ');
  const cases = nodes(program).map((n) => `    "${n.path.join(' ')}") words="${[...n.words, ...(n.path.length ? [globals] : [])].join(' ')}" ;;`).join('\n');
  return `# plinth completion for bash: source <(plinth completion bash)
_plinth() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word words
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$word" in -*) ;; *) path="\${path:+$path }$word" ;; esac
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

function fish(program: Command): string {
  const lines = ['# plinth completion for fish: plinth completion fish | source', 'complete -c plinth -f'];
  for (const node of nodes(program)) {
    const condition = node.path.length === 0 ? '__fish_use_subcommand' : `__fish_seen_subcommand_from ${node.path[node.path.length - 1]}`;
    const subs = node.words.filter((w) => !w.startsWith('-'));
    if (subs.length) lines.push(`complete -c plinth -n '${condition}' -a '${subs.join(' ')}'`);
  }
  for (const option of program.options) if (option.long) lines.push(`complete -c plinth -l ${option.long.slice(2)}`);
  return lines.join('\n') + '\n';
}

/** completionScript prints the script for `shell`; zsh uses the bash one through bashcompinit. */
export function completionScript(program: Command, shell: Shell): string {
  if (shell === 'fish') return fish(program);
  if (shell === 'zsh') return `# plinth completion for zsh: source <(plinth completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash(program)}`;
  return bash(program);
}
