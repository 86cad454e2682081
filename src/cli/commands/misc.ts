// api (the escape hatch), completion and version.

import type { Command } from 'commander';
import { SDK_VERSION, toApiError } from '@plinth/sdk';
import { action, examples, localAction, readDocument } from '../command-kit.ts';
import { METHODS } from '../enums.ts';
import { UsageError } from '../exit-codes.ts';
import { completionScript, SHELLS, type Shell } from '../completion.ts';
import { CLI_VERSION, type Session } from '../session.ts';
import { stdout } from '../stdio.ts';

/** api (any endpoint), completion and version. */
export function miscCommands(program: Command) {
  examples(
    program
      .command('api <method> <path>')
      .description("call any endpoint with the context's credential and print the response body")
      .option('-d, --data <file>', 'the request body, JSON or YAML (- for standard input)'),
    'plinth api GET /auth/whoami',
    'plinth api POST /projects -d project.json',
    'echo \'{"data":{"name":"Web"}}\' | plinth api PATCH /projects/<id> -d -',
  ).action(
    action(async (s: Session, method: string, path: string, o: { data?: string }) => {
      const verb = method.toUpperCase();
      if (!(METHODS as readonly string[]).includes(verb)) throw new UsageError(`the method is one of ${METHODS.join(', ')}, not "${method}"`);
      if (!path.startsWith('/')) throw new UsageError(`the path starts with /, e.g. /auth/whoami, not "${path}"`);
      const body = o.data === undefined ? undefined : JSON.stringify(readDocument(o.data));
      const response = await s.plinth.fetch(path, { method: verb, body, headers: body === undefined ? {} : { 'content-type': 'application/json' } });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // Not JSON: printed as it came.
      }
      if (!response.ok) throw toApiError(response, parsed);
      if (parsed !== null) s.out.document(parsed);
    }),
  );

  program
    .command('completion <shell>')
    .description(`print a completion script: ${SHELLS.join(', ')} (e.g. source <(plinth completion bash))`)
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`the shell is one of ${SHELLS.join(', ')}, not "${shell}"`);
      stdout.write(completionScript(shell as Shell));
    });

  program
    .command('version')
    .description('the versions of the CLI and the SDK')
    .action(
      localAction((s: Session) => {
        s.out.item({ cli: CLI_VERSION, sdk: SDK_VERSION, node: process.version });
      }),
    );
}
