// The exit codes of the user commands: a contract with the scripts that call plinth (docs/cli.md).

export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  AUTH: 3,
  NOT_FOUND: 4,
  RUN_FAILED: 5,
  WAITING_FOR_APPROVAL: 6,
  TIMEOUT: 7,
  CANCELLED: 8,
  /** The context's saved key belongs to another host than the one asked for: it is not sent. */
  KEY_FOR_OTHER_HOST: 9,
  INTERRUPTED: 130,
  /** stdout's reader went away: 128 + SIGPIPE, what a shell reports for a program a closed pipe stopped. */
  READER_GONE: 141,
} as const;

/** CliExit ends a command with a given exit code, after its output is written; `message` goes to stderr. */
export class CliExit extends Error {
  constructor(
    readonly code: number,
    message = '',
  ) {
    super(message);
    this.name = 'CliExit';
  }
}

/** UsageError is a command line that cannot mean anything: exit 2. */
export class UsageError extends CliExit {
  constructor(message: string) {
    super(EXIT.USAGE, message);
    this.name = 'UsageError';
  }
}

/** The exit code a run's final status means (a run still waiting for a person is 6). */
export function exitCodeOfRunStatus(status: string): number {
  switch (status) {
    case 'SUCCEEDED':
      return EXIT.OK;
    case 'FAILED':
      return EXIT.RUN_FAILED;
    case 'CANCELLED':
      return EXIT.CANCELLED;
    case 'WAITING_FOR_APPROVAL':
      return EXIT.WAITING_FOR_APPROVAL;
    default:
      return EXIT.ERROR;
  }
}
