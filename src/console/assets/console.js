// The console's own behaviour, small and without dependencies: line anchors in the log viewer,
// following a log's end, copy buttons, the command palette and keyboard shortcuts. Pages work without
// it; it adds what a link cannot do.
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
  // Copy buttons: a record's id, or a link to the page (without its #fragment).
  document.addEventListener('click', async (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-copy], button[data-copy-link]') : null;
    if (!button) return;
    const text = button.hasAttribute('data-copy') ? button.dataset.copy : location.href.split('#')[0];
    try {
      await navigator.clipboard.writeText(text);
      flash(button, 'Copied');
    } catch {
      flash(button, 'Copy failed');
    }
  });

  function flash(button, words) {
    const before = button.textContent;
    button.textContent = words;
    setTimeout(() => {
      button.textContent = before;
    }, 1500);
  }

  // Dialogs opened by a button (data-open="<dialog id>") or a key.
  function open(id) {
    const dialog = document.getElementById(id);
    if (!dialog || dialog.open) return;
    dialog.showModal();
    if (id === 'palette') {
      const input = document.getElementById('palette-q');
      input.value = '';
      document.getElementById('palette-results').replaceChildren();
      input.focus();
    }
  }
  document.addEventListener('click', (event) => {
    const opener = event.target instanceof Element ? event.target.closest('[data-open]') : null;
    if (opener) open(opener.dataset.open);
  });

  /** Moves the focus `step` places among `links`, from the one focused. */
  function moveAmong(links, step) {
    if (!links.length) return;
    const at = links.indexOf(document.activeElement);
    const next = links[Math.max(0, Math.min(links.length - 1, at === -1 ? (step > 0 ? 0 : links.length - 1) : at + step))];
    next.focus();
    return next;
  }

  let goPending = false;
  document.addEventListener('keydown', (event) => {
    const palette = document.getElementById('palette');
    if (palette?.open && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
      event.preventDefault();
      moveAmong([...palette.querySelectorAll('#palette-results a')], event.key === 'ArrowDown' ? 1 : -1);
      return;
    }
    const target = event.target;
    const typing = target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
    if (typing || event.altKey || document.querySelector('dialog[open]')) return;
    if ((event.key === 'k' && (event.ctrlKey || event.metaKey)) || (event.key === '/' && !event.ctrlKey && !event.metaKey)) {
      event.preventDefault();
      open('palette');
    } else if (event.ctrlKey || event.metaKey) {
      return;
    } else if (event.key === '?') {
      open('shortcuts');
    } else if (goPending) {
      goPending = false;
      const link = document.querySelector(`a[data-go="${CSS.escape(event.key)}"]`);
      if (link) location.assign(link.href);
    } else if (event.key === 'g') {
      goPending = true;
      setTimeout(() => {
        goPending = false;
      }, 1500);
    } else if (event.key === 'j' || event.key === 'k') {
      // The first link of each row of the page's lists.
      const links = [...document.querySelectorAll('main table tbody tr')].map((row) => row.querySelector('a')).filter(Boolean);
      const row = moveAmong(links, event.key === 'j' ? 1 : -1)?.closest('tr');
      for (const other of document.querySelectorAll('tr.current')) other.classList.remove('current');
      row?.classList.add('current');
    }
  });

  document.addEventListener('change', (event) => {
    if (event.target instanceof HTMLInputElement && event.target.id === 'log-follow' && event.target.checked) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  });
})();
