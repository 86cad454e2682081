// The command line's standard output and error, written with write(2) as each piece is ready. Node's
// process.stdout is a stream built on first use: on a pipe it loads node:net and Node's streams (a
// tenth of a short command's start, by npm run bench:cli), and on macOS it writes a pipe
// asynchronously, so what is still queued when a command exits is lost. Writing the descriptor does
// neither.

import { fstatSync, statSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { EXIT } from './exit-codes.ts';

/** Where a command writes text: its standard output or its standard error. */
export interface TextOut {
  /** Whether it is a terminal (a person reads it). */
  readonly isTTY: boolean;
  /** The terminal's width in columns; undefined when not a terminal. */
  readonly columns: number | undefined;
  write(text: string): void;
}

/** How long a write waits for a non-blocking descriptor that is full (EAGAIN) before it tries again. */
const FULL_WAIT_MS = 2;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

class Descriptor implements TextOut {
  private terminal: boolean | undefined;

  constructor(
    private readonly fd: 1 | 2,
    private readonly stream: () => NodeJS.WriteStream,
  ) {}

  get isTTY(): boolean {
    this.terminal ??= isTerminal(this.fd);
    return this.terminal;
  }

  get columns(): number | undefined {
    return this.isTTY ? this.stream().columns : undefined;
  }

  write(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    let written = 0;
    while (written < bytes.length) {
      try {
        written += writeSync(this.fd, bytes, written);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A descriptor another program left non-blocking, and full: the reader is slower than us.
        if (code === 'EAGAIN') Atomics.wait(sleeper, 0, 0, FULL_WAIT_MS);
        else if (code === 'EINTR') continue;
        // What stderr cannot take cannot be told anywhere else.
        else if (this.fd === 2) return;
        // The reader went away (`plinth run logs | head`): the command ends quietly, with the status of
        // a program that SIGPIPE stopped (Node ignores the signal itself), so that a script with
        // `set -o pipefail` still sees that it did not finish. Any other failure (a full disk) fails it.
        else if (code === 'EPIPE') process.exit(EXIT.READER_GONE);
        else throw error;
      }
    }
  }
}

/**
 * Every terminal is a character device, and so is /dev/null, where scripts send what they do not
 * read, which is not one: only a descriptor that is another character device (a terminal, nearly
 * always) loads node:tty, which loads Node's streams, to ask whether it is a terminal.
 */
function isTerminal(fd: number): boolean {
  try {
    const device = fstatSync(fd);
    if (!device.isCharacterDevice() || device.rdev === statSync('/dev/null').rdev) return false;
  } catch {
    return false;
  }
  // By require, not import(): bin/plinth.js runs the user commands as a script, which has no import().
  const { isatty } = createRequire(import.meta.url)('node:tty') as typeof import('node:tty');
  return isatty(fd);
}

export const stdout: TextOut = new Descriptor(1, () => process.stdout);
export const stderr: TextOut = new Descriptor(2, () => process.stderr);
