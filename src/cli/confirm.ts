// The confirmation a destructive command asks for: the record's name typed back, or --yes.

import { createRequire } from 'node:module';
import { CliExit, EXIT, UsageError } from './exit-codes.ts';
import { terminalSafe } from './output.ts';

/**
 * confirmByName goes on only when `yes` was given or a person at a terminal types `name` back. Without
 * a terminal nobody can answer, so that is a usage error rather than a silent yes.
 */
export async function confirmByName(what: string, name: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw new UsageError(`deleting ${what} needs a confirmation: standard input is not a terminal, so pass --yes`);
  // Loaded here, not at start: readline loads Node's streams, a tenth of a short command's start. By
  // require, not import(): bin/plinth.js runs the user commands as a script, which has no import().
  const { createInterface } = createRequire(import.meta.url)('node:readline/promises') as typeof import('node:readline/promises');
  // readline writes its question to a stream: process.stderr, here only ever a terminal (stdin is one).
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const typed = await prompt.question(`This deletes ${terminalSafe(what)}. Type its name (${terminalSafe(name)}) to go on: `).catch((error: Error) => {
      // Ctrl-C at the question: readline rejects with an AbortError, which is an interruption like any other.
      if (error.name === 'AbortError') throw new CliExit(EXIT.INTERRUPTED);
      throw error;
    });
    if (typed.trim() !== name) throw new CliExit(EXIT.ERROR, `"${typed.trim()}" is not "${name}": nothing was deleted`);
  } finally {
    prompt.close();
  }
}
