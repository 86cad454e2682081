// The plinth executable's entry. The process commands load the server (Fastify, pg, the engine) only
// when one of them runs, so the user commands start quickly.

import { runCli } from './cli/main.ts';
import { stderr } from './cli/stdio.ts';

runCli(process.argv.slice(2), async (command) => (await import('./server-process.ts')).runServerCommand(command)).then(
  (code) => {
    if (code !== 'running') process.exit(code);
  },
  (error) => {
    stderr.write(`plinth: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
