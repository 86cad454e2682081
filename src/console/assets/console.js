// The console's own behaviour, small and without dependencies: line anchors in the log viewer and
// following a log's end. Pages work without it; it adds what a link cannot do.
(() => {
  const RANGE = /^#L(\d+)(?:-L(\d+))?$/;
  const CONTEXT_LINES = 20;

  /** The lines the address names (#L120 or #L120-L140), lowest first. */
  function selectedRange() {
    const match = RANGE.exec(location.hash);
    if (!match) return undefined;
    const a = Number(match[1]);
    const b = match[2] ? Number(match[2]) : a;
    return [Math.min(a, b), Math.max(a, b)];
  }

  /** Marks the named lines; when asked, scrolls to them, or opens the log where they are when this page does not hold them. */
  function markLines(scroll) {
    const log = document.getElementById('log');
    if (log?.dataset.view !== 'window') return;
    for (const line of log.querySelectorAll('.log-line.selected')) line.classList.remove('selected');
    const range = selectedRange();
    if (!range) return;
    let first;
    for (const line of log.querySelectorAll('.log-line[id]')) {
      const seq = Number(line.dataset.seq);
      if (seq >= range[0] && seq <= range[1]) {
        line.classList.add('selected');
        first ??= line;
      }
    }
    if (first && scroll) first.scrollIntoView({ block: 'center' });
    // Opened a little before the first line named, as the server's links into a log are.
    const start = String(Math.max(0, range[0] - 1 - CONTEXT_LINES));
    if (!first && scroll && log.dataset.after !== start) location.replace(`?after=${start}${location.hash}`);
  }

  // A click on a line number names that line in the address; with Shift, the lines from the one named to it.
  document.addEventListener('click', (event) => {
    const number = event.target instanceof Element ? event.target.closest('#log .log-line[id] a.ln') : null;
    if (!number) return;
    event.preventDefault();
    const seq = Number(number.parentElement.dataset.seq);
    const range = selectedRange();
    const hash = event.shiftKey && range ? `#L${Math.min(range[0], seq)}-L${Math.max(range[0], seq)}` : `#L${seq}`;
    history.replaceState(null, '', hash);
    markLines(false);
  });

  window.addEventListener('hashchange', () => markLines(true));
  document.addEventListener('DOMContentLoaded', () => markLines(true));

  // New lines swapped in: marked if named, and shown if the reader follows the end.
  document.addEventListener('htmx:afterSettle', () => {
    markLines(false);
    const follow = document.getElementById('log-follow');
    if (follow?.checked) window.scrollTo(0, document.body.scrollHeight);
  });
  document.addEventListener('change', (event) => {
    if (event.target instanceof HTMLInputElement && event.target.id === 'log-follow' && event.target.checked) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });
})();
