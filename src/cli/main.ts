// The plinth command line: the process commands (serve, api, worker, migrate) and the user commands
// built on @plinth/sdk. Every failure ends in one of the documented exit codes (docs/cli.md).

import { Command, CommanderError, Option } from 'commander';
import { PlinthApiError, PlinthTimeoutError } from '@plinth/sdk';
import { CliExit, EXIT } from './exit-codes.ts';
import { codeSourceCommands, keyCommands } from './commands/access.ts';
import { authCommands, contextCommands } from './commands/auth.ts';
import { miscCommands } from './commands/misc.ts';
import { definitionCommands, instanceCommands } from './commands/modules.ts';
import { envCommands, orgCommands, pipelineCommands, projectCommands, stackCommands } from './commands/resources.ts';
import { runCommands } from './commands/runs.ts';
import { OUTPUT_FORMATS, parseFormat, terminalLines, useColour } from './output.ts';
import { CLI_VERSION, Session, type GlobalOptions } from './session.ts';
import { commandOf, COMPLETE_COMMAND, completions } from './completion.ts';
import { stderr, stdout } from './stdio.ts';

export const SERVER_COMMANDS = {
  serve: 'API and worker in one process (what npm start runs)',
  'api-server': 'the HTTP API only (workers run beside it: plinth worker)',
  worker: 'the run worker only',
  migrate: 'apply pending database migrations and exit',
} as const;

/** The processes Plinth can be; each process command starts one. */
export type ServerCommand = 'serve' | 'api' | 'worker' | 'migrate';
const PROCESS_OF: Record<keyof typeof SERVER_COMMANDS, ServerCommand> = { serve: 'serve', 'api-server': 'api', worker: 'worker', migrate: 'migrate' };

/** Starts a process command; it resolves once the process is up (or, for migrate, done). */
export type ServerRunner = (command: ServerCommand) => Promise<void>;

/**
 * Help that shows the global options under every command and marks the options a command cannot do
 * without, as people expect of gh and kubectl.
 */
const HELP = {
  showGlobalOptions: true,
  optionDescription(option: Option): string {
    const base = option.description;
    return option.mandatory ? `${base ? `${base} ` : ''}(required)` : base;
  },
};

/** Commander writes help and usage errors as the commands write (stdio.ts), with the same idea of a terminal. */
const OUTPUT = {
  writeOut: (text: string) => stdout.write(text),
  writeErr: (text: string) => stderr.write(text),
  getOutHelpWidth: () => stdout.columns ?? 80,
  getErrHelpWidth: () => stderr.columns ?? 80,
  getOutHasColors: () => useColour(stdout),
  getErrHasColors: () => useColour(stderr),
};

/**
 * The command groups, each with the function that adds its subcommands. Adding all of them (some two
 * hundred commands and options) takes longer than the rest of a short command's work, so buildProgram
 * adds only those of the group the command line names: help lists a group by its name and description.
 */
const GROUPS: Record<string, { description: string; fill: (group: Command) => void }> = {
  context: { description: 'named sets of host, organization and project', fill: contextCommands },
  org: { description: 'organizations the key can act in', fill: orgCommands },
  project: { description: "the organization's projects", fill: projectCommands },
  env: { description: "a project's environments", fill: envCommands },
  stack: { description: 'OpenTofu stacks', fill: stackCommands },
  pipeline: { description: 'versioned pipelines', fill: pipelineCommands },
  module: { description: 'the module catalogue: definitions and their published versions', fill: definitionCommands },
  instance: { description: 'module instances: versions of modules deployed in environments', fill: instanceCommands },
  key: { description: "API keys: the caller's own (ADMIN and above see the organization's)", fill: keyCommands },
  'code-source': { description: 'the Git repositories stacks take their OpenTofu code from', fill: codeSourceCommands },
  run: { description: 'pipeline runs', fill: runCommands },
};

/** The program's options that take a value: the word after one is not a command. */
const GLOBAL_VALUE_OPTIONS = new Set(['--host', '--org', '--project', '--context', '-o', '--output']);

/**
 * groupsNeeded names the group whose subcommands the command line `argv` can reach: the first word
 * that is not a global option (or the one after `help`); completions (`__complete`) walk the whole tree.
 */
function groupsNeeded(argv: string[]): string | 'all' | undefined {
  let i = 0;
  while (i < argv.length && argv[i].startsWith('-')) i += GLOBAL_VALUE_OPTIONS.has(argv[i]) ? 2 : 1;
  const word = argv[i] === 'help' ? argv[i + 1] : argv[i];
  return word === COMPLETE_COMMAND ? 'all' : word;
}

/**
 * buildProgram assembles the command tree for the command line `argv`. A command with a `--version` of
 * its own (`module publish --version 1.2.0`) takes it: the program's `-V, --version`, which commander
 * recognises anywhere on the line, is left out then.
 */
export function buildProgram(runServer: ServerRunner, argv: string[] = []): Command {
  const program = new Command('plinth')
    .usage('<command> [options]')
    .description('Plinth: run the platform (serve, api-server, worker, migrate), or use it (everything else)')
    .exitOverride()
    .configureOutput(OUTPUT)
    .showHelpAfterError()
    .configureHelp(HELP)
    .option('--host <url>', 'the Plinth API (env PLINTH_HOST; default http://127.0.0.1:8080)')
    .option('--org <org>', 'act in this organization: id or name (env PLINTH_ORG)')
    .option('--project <project>', 'the project of project-scoped commands: id, givenId or name (env PLINTH_PROJECT)')
    .option('--context <name>', 'use this context instead of the current one (env PLINTH_CONTEXT)')
    .addOption(new Option('-o, --output <format>', `${OUTPUT_FORMATS.join(', ')} (env PLINTH_OUTPUT; default table; wide adds ids)`).argParser(parseFormat));
  for (const [name, description] of Object.entries(SERVER_COMMANDS) as [keyof typeof SERVER_COMMANDS, string][]) {
    program
      .command(name)
      .description(description)
      .action(() => runServer(PROCESS_OF[name]));
  }
  authCommands(program);
  const needed = groupsNeeded(argv);
  for (const [name, { description, fill }] of Object.entries(GROUPS)) {
    const group = program.command(name).description(description);
    if (needed === 'all' || needed === name) fill(group);
  }
  miscCommands(program);
  const command = commandOf(program, argv);
  if (command === program || !command.options.some((o) => o.long === '--version')) program.version(CLI_VERSION, '-V, --version', 'the CLI version');
  return program;
}

/** The session a completion acts in: the global flags among the words typed so far, then the environment and context as ever. */
function completionSession(words: string[]): Session {
  const flags: GlobalOptions = {};
  // The last word is the one being typed: never a value to act with.
  for (let i = 0; i < words.length - 2; i++) {
    if (!words[i].startsWith('--')) continue;
    const name = words[i].slice(2);
    if (name === 'host' || name === 'org' || name === 'project' || name === 'context') flags[name] = words[i + 1];
  }
  return new Session(flags);
}

function fail(code: number, message: string): number {
  if (message) stderr.write(`plinth: ${terminalLines(message)}\n`);
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
    // An item may span lines (a command's output, a validator's message): each continues indented.
    const details = (error.body.details ?? [])
      .flatMap((d) => d.items ?? [])
      .map((item) => `\n  ${item.replace(/\r?\n/g, '\n    ')}`)
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
  }, argv);
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return EXIT.USAGE;
  }
  if (argv[0] === COMPLETE_COMMAND) {
    for (const word of await completions(program, argv.slice(1), () => completionSession(argv.slice(1)))) stdout.write(`${word}\n`);
    return EXIT.OK;
  }
  const interrupted = () => process.exit(EXIT.INTERRUPTED);
  const isServer = argv[0] in SERVER_COMMANDS;
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
