// stack state list|pull: the versions of a stack's OpenTofu state, which Plinth keeps as its backend.

import type { Command } from 'commander';
import { unwrap } from '@plinth/sdk';
import { action, examples } from '../command-kit.ts';
import { CliExit, EXIT } from '../exit-codes.ts';
import { printList, readList, withListOptions, type ListFlags } from '../listing.ts';
import type { Session } from '../session.ts';

export function stackStateCommands(stack: Command) {
  const state = stack.command('state').description("a stack's OpenTofu state versions (every one is kept)");
  examples(withListOptions(state.command('list <stack>').description('the state versions, newest first')), 'plinth stack state list site --limit 5').action(
    action(async (s: Session, ref: string, o: ListFlags) => {
      const id = await s.resolve('stack', ref);
      printList(s, await readList(s.plinth, '/stacks/{id}/state-versions', { path: { id } }, o), [
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
      action(async (s: Session, ref: string, o: { stateVersion?: string }) => {
        const id = await s.resolve('stack', ref);
        let versionId = o.stateVersion;
        if (versionId === undefined) {
          const [latest] = (await readList(s.plinth, '/stacks/{id}/state-versions', { path: { id } }, { limit: 1 })).items;
          if (latest === undefined) throw new CliExit(EXIT.NOT_FOUND, `stack ${ref} has no state yet`);
          versionId = latest.id;
        }
        const version = (await unwrap(s.plinth.api.GET('/stacks/{id}/state-versions/{versionId}', { params: { path: { id, versionId } } }))).data;
        // The state file is the data: as JSON (what `tofu state pull` prints) unless YAML is asked for.
        if (s.out.format === 'yaml') s.out.document(version.state);
        else s.out.stdout.write(`${JSON.stringify(version.state, null, 2)}\n`);
      }),
    );
}
