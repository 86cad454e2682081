// --watch: a view printed again every few seconds, redrawn in place on a terminal, until Ctrl-C or
// until what it shows is done.

import { outage } from './reconnect.ts';
import type { Session } from './session.ts';

export const WATCH_INTERVAL_MS = 2000;
const CLEAR = '\u001b[H\u001b[2J';

/** watch runs `print` now and every WATCH_INTERVAL_MS until `done()` says so (or the user presses Ctrl-C). */
export async function watch(s: Session, print: () => Promise<void>, done: () => boolean): Promise<void> {
  const redraw = Boolean(s.out.stdout.isTTY) && s.out.human;
  const link = outage(s);
  for (let first = true; ; first = false) {
    if (redraw) s.out.stdout.write(`${CLEAR}${s.out.paint(`every ${WATCH_INTERVAL_MS / 1000}s, Ctrl-C to stop · ${new Date().toISOString()}`, 'dim')}\n\n`);
    else if (!first && s.out.human) s.out.stdout.write('\n');
    await link.call(print);
    if (done()) return;
    await new Promise((resolve) => setTimeout(resolve, WATCH_INTERVAL_MS));
  }
}
