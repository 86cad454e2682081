// The plinth command line: the process commands (serve, api, worker, migrate) and the user commands
// built on @plinth/sdk. Every failure ends in one of the documented exit codes (docs/cli.md).

import { Command, CommanderError, Option } from 'commander';
import { PlinthApiError, PlinthTimeoutError } from '@plinth/sdk';
import { CliExit, EXIT } from './exit-codes.ts';
import { authCommands } from './commands/auth.ts';
import { miscCommands } from './commands/misc.ts';
import { resourceCommands } from './commands/resources.ts';
import { runCommands } from './commands/runs.ts';
import { OUTPUT_FORMATS, terminalSafe } from './output.ts';
import { CLI_VERSION } from './session.ts';

export const SERVER_COMMANDS = {
  serve: 'API and worker in one process (what npm start runs)',
  api: 'the HTTP API only',
  worker: 'the run worker only',
  migrate: 'apply pending database migrations and exit',
} as const;
export type ServerCommand = keyof typeof SERVER_COMMANDS;

/** Starts a process command; it resolves once the process is up (or, for migrate, done). */
export type ServerRunner = (command: ServerCommand) => Promise<void>;

/** buildProgram assembles the command tree. */
export function buildProgram(runServer: ServerRunner): Command {
  const program = new Command('plinth')
    .usage('<command> [options]')
    .description('Plinth: run the platform (serve, api, worker, migrate), or use it (everything else)')
    .version(CLI_VERSION, '-V, --version', 'the CLI version')
    .exitOverride()
    .showHelpAfterError()
    .option('--host <url>', 'the Plinth API (env PLINTH_HOST; default http://127.0.0.1:8080)')
    .option('--org <id>', 'act in this organization (env PLINTH_ORG)')
    .option('--project <id>', 'the project of project-scoped commands (env PLINTH_PROJECT)')
    .option('--context <name>', 'use this context instead of the current one (env PLINTH_CONTEXT)')
    .addOption(new Option('-o, --output <format>', 'table, json or yaml (env PLINTH_OUTPUT; default table)').choices(OUTPUT_FORMATS));
  for (const [name, description] of Object.entries(SERVER_COMMANDS)) {
    // `api` is both: alone it runs the HTTP API process, with a method and a path it calls one endpoint.
    if (name !== 'api')
      program
        .command(name)
        .description(description)
        .action(() => runServer(name as ServerCommand));
  }
  authCommands(program);
  resourceCommands(program);
  runCommands(program);
  miscCommands(program, () => runServer('api'));
  return program;
}

function fail(code: number, message: string): number {
  if (message) process.stderr.write(`plinth: ${terminalSafe(message)}\n`);
  return code;
}

/** exitCodeOf maps a failure to its exit code, writing the one line a person needs on stderr. */
export function exitCodeOf(error: unknown, host?: string): number {
  if (error instanceof CommanderError) {
    // Commander has printed its message (and the help) already.
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.OK;
    return EXIT.USAGE;
  }
  if (error instanceof CliExit) return fail(error.code, error.message);
  if (error instanceof PlinthApiError) {
    const details = (error.body.details ?? [])
      .flatMap((d) => d.items ?? [])
      .map((item) => `\n  ${item}`)
      .join('');
    if (error.status === 401) return fail(EXIT.AUTH, `${error.body.message} (${error.code}): run plinth login`);
    if (error.status === 404) return fail(EXIT.NOT_FOUND, `${error.body.message} (${error.code})`);
    return fail(EXIT.ERROR, `${error.body.message} (${error.code})${details}`);
  }
  if (error instanceof PlinthTimeoutError || (error instanceof Error && error.name === 'TimeoutError'))
    return fail(EXIT.TIMEOUT, `timed out: ${error.message}`);
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error.cause as Error | undefined)?.message ?? 'no answer';
    return fail(EXIT.ERROR, `cannot reach ${host ?? 'the server'}: ${cause}`);
  }
  return fail(EXIT.ERROR, error instanceof Error ? error.message : String(error));
}

/**
 * runCli runs one command line. It resolves to the exit code of a user command, or to 'running'
 * when a process command started (the process then lives until a signal ends it).
 */
export async function runCli(argv: string[], runServer: ServerRunner): Promise<number | 'running'> {
  let started = false;
  const program = buildProgram(async (command) => {
    started = true;
    await runServer(command);
  });
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return EXIT.USAGE;
  }
  const interrupted = () => process.exit(EXIT.INTERRUPTED);
  const isServer = argv[0] in SERVER_COMMANDS && !(argv[0] === 'api' && argv.length > 1);
  if (!isServer) process.on('SIGINT', interrupted);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return started ? 'running' : EXIT.OK;
  } catch (error) {
    if (started) throw error;
    return exitCodeOf(error, program.opts<{ host?: string }>().host ?? process.env.PLINTH_HOST);
  } finally {
    if (!isServer) process.off('SIGINT', interrupted);
  }
}
