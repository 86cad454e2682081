import type { ComponentChildren, VNode } from 'preact';
import { render } from 'preact-render-to-string';
import type { Assets } from '../assets.ts';

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

function Page({ title, assets, viewer, children }: PageProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
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
        </header>
        <main id="main">{children}</main>
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
            <a href={`${org}/runs`}>Runs</a>
          </li>
          <li>
            <a href={`${org}/stacks`}>Stacks</a>
          </li>
          <li>
            <a href={`${org}/environments`}>Environments</a>
          </li>
        </ul>
      </nav>
      <div class="who">
        <span>
          {viewer.name} · {viewer.organizationName} · {viewer.role.toLowerCase()}
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

/** A POST form that carries the session's anti-forgery token. */
export function CsrfForm({ action, csrfToken, children }: { action: string; csrfToken: string; children: ComponentChildren }) {
  return (
    <form method="post" action={action} class="inline">
      <input type="hidden" name="_csrf" value={csrfToken} />
      {children}
    </form>
  );
}
