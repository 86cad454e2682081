import type { ComponentChildren, VNode } from 'preact';
import { render } from 'preact-render-to-string';
import type { Assets } from '../assets.ts';
import { roleAtLeast, type Role } from '../../platform/auth/roles.ts';
import { THEMES, type Theme } from '../preferences.ts';

/** htmx settings that keep it within the Content-Security-Policy: no inline styles, no eval, no inline scripts. */
const HTMX_CONFIG = JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, selfRequestsOnly: true });

/** Who is signed in, where, and what forms must carry: what the header and every form need. */
export interface Viewer {
  name: string;
  role: string;
  organizationId: string;
  organizationName: string;
  csrfToken: string;
}

export interface PageProps {
  title: string;
  assets: Assets;
  viewer?: Viewer;
  /** The reader's theme: `system` follows the system's. */
  theme: Theme;
  /** The page's own path and query, for the theme form to come back to. */
  path: string;
  /**
   * Where the page sends the browser on at once. A page at the end of a Git server's redirects is
   * answered with this instead of one more redirect: a browser sends no SameSite=Strict cookie (the
   * session's) along a chain of redirects that began on another site, but does from this page.
   */
  refreshTo?: string;
  children: ComponentChildren;
}

/** A whole page as HTML text: the document, the header with navigation, and the page's content. */
export function renderPage(props: PageProps): string {
  return `<!doctype html>${render(<Page {...props} />)}`;
}

/** A part of a page as HTML text, for htmx to swap in. */
export function renderFragment(node: VNode): string {
  return render(node);
}

function Page({ title, assets, viewer, theme, path, refreshTo, children }: PageProps) {
  return (
    <html lang="en" data-theme={theme === 'system' ? undefined : theme}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
        {refreshTo && <meta http-equiv="refresh" content={`0;url=${refreshTo}`} />}
        <title>{`${title} · Plinth`}</title>
        {/* No icon of its own yet: an empty one, so the browser does not ask for /favicon.ico. */}
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href={assets.url('console.css')} />
        <script src={assets.url('htmx.min.js')} defer />
        <script src={assets.url('sse.min.js')} defer />
        <script src={assets.url('console.js')} defer />
      </head>
      <body hx-headers={viewer ? JSON.stringify({ 'x-csrf-token': viewer.csrfToken }) : undefined}>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/">
            Plinth
          </a>
          {viewer && <Navigation viewer={viewer} />}
          <ThemeForm theme={theme} path={path} csrfToken={viewer?.csrfToken} />
        </header>
        <main id="main">{children}</main>
        {viewer && <Dialogs orgPath={`/orgs/${encodeURIComponent(viewer.organizationId)}`} />}
      </body>
    </html>
  );
}

function Navigation({ viewer }: { viewer: Viewer }) {
  const org = `/orgs/${encodeURIComponent(viewer.organizationId)}`;
  return (
    <>
      <nav aria-label="Main">
        <ul>
          <li>
            <a href={`${org}/runs`} data-go="r">
              Runs
            </a>
          </li>
          <li>
            <a href={`${org}/stacks`} data-go="s">
              Stacks
            </a>
          </li>
          <li>
            <a href={`${org}/environments`} data-go="e">
              Environments
            </a>
          </li>
          <li>
            <a href={`${org}/pipelines`} data-go="p">
              Pipelines
            </a>
          </li>
          <li>
            <a href={`${org}/code-sources`} data-go="c">
              Code
            </a>
          </li>
          <li>
            <a href={`${org}/access`} data-go="a">
              Access
            </a>
          </li>
          {roleAtLeast(viewer.role as Role, 'ADMIN') && (
            <li>
              <a href={`${org}/audit`} data-go="l">
                Audit
              </a>
            </li>
          )}
          <li>
            <button type="button" class="secondary" data-open="palette" title="Go to a stack, environment or run (/ or Ctrl-K)">
              Go to…
            </button>
          </li>
        </ul>
      </nav>
      <div class="who">
        <span>
          <a href={`${org}/account`} title="Your account: Git sign-ins">
            {viewer.name}
          </a>{' '}
          · <a href={`${org}/organization`}>{viewer.organizationName}</a> · {viewer.role.toLowerCase()}
        </span>
        <CsrfForm action="/sign-out" csrfToken={viewer.csrfToken}>
          <button type="submit" class="secondary">
            Sign out
          </button>
        </CsrfForm>
        <CsrfForm action="/sign-out" csrfToken={viewer.csrfToken}>
          <input type="hidden" name="everywhere" value="yes" />
          <button type="submit" class="secondary" title="End every console session of yours, in every browser">
            Sign out everywhere
          </button>
        </CsrfForm>
      </div>
    </>
  );
}

/** Light, dark, or the system's: a small form in the header, on every page, signed in or not. */
function ThemeForm({ theme, path, csrfToken }: { theme: Theme; path: string; csrfToken?: string }) {
  return (
    <form method="post" action="/preferences/theme" class="theme-form">
      {csrfToken && <input type="hidden" name="_csrf" value={csrfToken} />}
      <input type="hidden" name="back" value={path} />
      <label for="theme-choice">Theme</label>
      <select id="theme-choice" name="theme">
        {THEMES.map((t) => (
          <option key={t} value={t} selected={t === theme}>
            {t}
          </option>
        ))}
      </select>
      <button type="submit" class="secondary">
        Apply
      </button>
    </form>
  );
}

/** The command palette and the list of shortcuts, opened from the keyboard (console.js) or the header's button. */
function Dialogs({ orgPath }: { orgPath: string }) {
  return (
    <>
      <dialog id="palette" aria-labelledby="palette-title">
        <h2 id="palette-title">Go to</h2>
        <label for="palette-q">A stack or environment by name, or a run by its id</label>
        <input
          id="palette-q"
          type="search"
          name="q"
          autocomplete="off"
          maxLength={100}
          hx-get={`${orgPath}/palette`}
          hx-trigger="input changed delay:150ms, search"
          hx-target="#palette-results"
        />
        <ul id="palette-results" class="palette-results" aria-live="polite" />
        <p class="muted">↑ and ↓ to choose, Enter to go, Esc to close.</p>
      </dialog>
      <dialog id="shortcuts" aria-labelledby="shortcuts-title">
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <dl class="facts">
          <dt>
            <kbd>/</kbd> or <kbd>Ctrl</kbd> <kbd>K</kbd>
          </dt>
          <dd>Go to a stack, environment or run</dd>
          <dt>
            <kbd>g</kbd> <kbd>r</kbd>
          </dt>
          <dd>Runs</dd>
          <dt>
            <kbd>g</kbd> <kbd>s</kbd>
          </dt>
          <dd>Stacks</dd>
          <dt>
            <kbd>g</kbd> <kbd>e</kbd>
          </dt>
          <dd>Environments</dd>
          <dt>
            <kbd>g</kbd> <kbd>a</kbd> / <kbd>g</kbd> <kbd>l</kbd>
          </dt>
          <dd>Access / the audit log</dd>
          <dt>
            <kbd>g</kbd> <kbd>p</kbd>
          </dt>
          <dd>Pipelines</dd>
          <dt>
            <kbd>g</kbd> <kbd>c</kbd>
          </dt>
          <dd>Code sources</dd>
          <dt>
            <kbd>j</kbd> / <kbd>k</kbd>
          </dt>
          <dd>Next / previous row of a list; Enter opens it</dd>
          <dt>
            <kbd>?</kbd>
          </dt>
          <dd>This list</dd>
        </dl>
        <form method="dialog">
          <button type="submit">Close</button>
        </form>
      </dialog>
    </>
  );
}

/** A button that copies `text` (console.js does the copying). */
export function CopyButton({ text, label, ariaLabel }: { text: string; label: string; ariaLabel?: string }) {
  return (
    <button type="button" class="secondary small" data-copy={text} aria-label={ariaLabel}>
      {label}
    </button>
  );
}

/** Buttons that copy a record's id and a link to its page. */
export function CopyButtons({ id, what }: { id: string; what: string }) {
  return (
    <span class="copy-buttons">
      <CopyButton text={id} label="Copy ID" ariaLabel={`Copy ID of this ${what}`} />
      <button type="button" class="secondary small" data-copy-link="" aria-label={`Copy link to this ${what}`}>
        Copy link
      </button>
    </span>
  );
}

/** A POST form that carries the session's anti-forgery token. */
export function CsrfForm({ action, csrfToken, children }: { action: string; csrfToken: string; children: ComponentChildren }) {
  return (
    <form method="post" action={action} class="inline">
      <input type="hidden" name="_csrf" value={csrfToken} />
      {children}
    </form>
  );
}

/** The header of a table's column of buttons: named for screen readers, not shown (the buttons say what they do). */
export function ActionsHeader() {
  return (
    <th scope="col">
      <span class="skip-link">Actions</span>
    </th>
  );
}
