// Small pieces the commands share: an action wrapper that hands each a Session, file and flag parsing.

import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseYaml } from './yaml.ts';
import { UsageError } from './exit-codes.ts';
import { Session, type GlobalOptions } from './session.ts';

type Handler<A extends unknown[]> = (session: Session, ...args: A) => Promise<void> | void;

/**
 * action adapts a handler to commander: the handler gets a Session built from the global and local
 * options (precedence applied), then the positional arguments and the command's own options.
 */
export function action<A extends unknown[]>(handler: Handler<A>, options: { local?: boolean } = {}) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const session = new Session(command.optsWithGlobals<GlobalOptions>(), process.env, command.name() === 'login');
    // A command that only reads or writes the CLI's own files takes --org as it was typed.
    if (!options.local) {
      await session.warnIfCleartext();
      await session.resolveOrganization();
    }
    await handler(session, ...(args.slice(0, -1) as A));
  };
}

/** localAction is `action` for a command that only reads or writes the CLI's own files (contexts, keys). */
export function localAction<A extends unknown[]>(handler: Handler<A>) {
  return action(handler, { local: true });
}

/** examples adds an Examples section to a command's help. */
export function examples(command: Command, ...lines: string[]): Command {
  return command.addHelpText('after', `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`);
}

/** readDocument reads a JSON or YAML file (`-` is stdin). */
export function readDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw new UsageError(`${file} is neither JSON nor YAML: ${(error as Error).message}`);
  }
}

/** collect gathers a repeatable option's values. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** parseVars turns `k=v` pairs into an object; the value is JSON when it parses as JSON, else text. */
export function parseVars(pairs: string[], flag = '--var'): Record<string, unknown> {
  const vars: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new UsageError(`${flag} takes key=value, not "${pair}"`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Plain text: `--var region=eu-west-1` needs no quotes.
    }
    vars[pair.slice(0, eq)] = value;
  }
  return vars;
}

/** parseDuration reads `90`, `90s`, `10m` or `1h` as milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new UsageError(`a duration is a number with s, m or h (90s, 10m, 1h), not "${text}"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * unit;
}

/** all gathers an async iterable (a paginated list) into an array. */
export async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
