// stack state list|pull: the versions of a stack's OpenTofu state, which Plinth keeps as its backend.

import type { Command } from 'commander';
import { unwrap } from '@plinth/sdk';
import { action, all } from '../command-kit.ts';
import { CliExit, EXIT } from '../exit-codes.ts';
import type { Session } from '../session.ts';

export function stackStateCommands(stack: Command) {
  const state = stack.command('state').description("a stack's OpenTofu state versions (every one is kept)");
  state
    .command('list <stack>')
    .description('every state version, oldest first')
    .action(
      action(async (s: Session, id: string) => {
        const versions = await all(s.plinth.paginate('/stacks/{id}/state-versions', { path: { id } }));
        s.out.list(versions, [
          ['SERIAL', (v) => v.serial],
          ['ID', (v) => v.id],
          ['BYTES', (v) => v.sizeBytes],
          ['RUN', (v) => v.runId],
          ['WRITTEN BY', (v) => v.principalId],
          ['CREATED', (v) => v.createdAt],
        ]);
      }),
    );

  state
    .command('pull <stack>')
    .description('print a state file (the latest, or --state-version): it may hold secrets')
    .option('--state-version <id>', 'this state version instead of the latest (plinth stack state list)')
    .action(
      action(async (s: Session, id: string, o: { stateVersion?: string }) => {
        let versionId = o.stateVersion;
        if (versionId === undefined) {
          const versions = await all(s.plinth.paginate('/stacks/{id}/state-versions', { path: { id } }));
          if (versions.length === 0) throw new CliExit(EXIT.NOT_FOUND, `stack ${id} has no state yet`);
          versionId = versions[versions.length - 1].id;
        }
        const version = (await unwrap(s.plinth.api.GET('/stacks/{id}/state-versions/{versionId}', { params: { path: { id, versionId } } }))).data;
        // The state file is the data: as JSON (what `tofu state pull` prints) unless YAML is asked for.
        if (s.out.format === 'yaml') s.out.document(version.state);
        else s.out.stdout.write(`${JSON.stringify(version.state, null, 2)}\n`);
      }),
    );
}
