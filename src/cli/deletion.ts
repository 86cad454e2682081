// The one shape of every `delete` command: find the record, have its name typed back (or --yes), delete it.

import { action } from './command-kit.ts';
import { confirmByName } from './confirm.ts';
import type { KindName } from './resolve.ts';
import type { Session } from './session.ts';

export interface Deletable {
  /** What it is called in messages: "stack", "code source". */
  noun: string;
  kind: KindName;
  /** The name to type back: the record's givenId or name. */
  label(s: Session, id: string): Promise<string>;
  remove(s: Session, id: string): Promise<unknown>;
}

/** deleteAction is the action of `<noun> delete <ref> [--yes]`. */
export function deleteAction(d: Deletable) {
  return action(async (s: Session, ref: string, o: { yes?: boolean }) => {
    const id = await s.resolve(d.kind, ref);
    const label = await d.label(s, id);
    await confirmByName(`${d.noun} "${label}"`, label, o.yes);
    await d.remove(s, id);
    s.out.info(`deleted ${d.noun} "${label}" (${id})`);
  });
}
