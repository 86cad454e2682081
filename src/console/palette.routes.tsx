// The command palette's answers: the stacks and environments whose name holds what was typed, a run
// whose id it is, and the console's own pages; a list of links for htmx to put in the palette.

import { Type } from '@sinclair/typebox';
import type { App } from '../platform/http/app.ts';
import { ApiCallError } from './console-api.ts';
import { OrgParams, PAGE, type Pages } from './pages.tsx';
import { renderFragment } from './views/layout.tsx';

/** Stacks and environments offered at most, each. */
const MATCHES = 8;
const RUN_ID = /^[0-9a-f]{32}$/;

interface Match {
  href: string;
  kind: string;
  label: string;
  detail?: string;
}

export function consolePaletteRoutes(app: App, pages: Pages) {
  app.get(
    '/orgs/:org/palette',
    { ...PAGE, schema: { hide: true, params: OrgParams, querystring: Type.Object({ q: Type.Optional(Type.String({ maxLength: 100 })) }) } },
    async (request, reply) => {
      const ctx = await pages.context(request, request.params.org);
      const q = request.query.q?.trim() ?? '';
      const matches: Match[] = [];
      if (q) {
        const [stacks, environments, run] = await Promise.all([
          ctx.api.get('/stacks', { search: q, limit: MATCHES }),
          ctx.api.get('/environments', { search: q, limit: MATCHES }),
          RUN_ID.test(q) ? ctx.api.get(`/pipeline-runs/${q}`).catch(notFound) : undefined,
        ]);
        if (run) matches.push({ href: `${ctx.orgPath}/runs/${run.data.id}`, kind: 'Run', label: run.data.id, detail: run.data.status.toLowerCase() });
        for (const s of stacks.data) matches.push({ href: `${ctx.orgPath}/stacks/${encodeURIComponent(s.id)}`, kind: 'Stack', label: s.name });
        for (const e of environments.data)
          matches.push({ href: `${ctx.orgPath}/stacks?environmentId=${encodeURIComponent(e.id)}`, kind: 'Environment', label: e.name });
        for (const [label, path] of [
          ['Runs', '/runs'],
          ['Stacks', '/stacks'],
          ['Environments', '/environments'],
        ]) {
          if (label.toLowerCase().includes(q.toLowerCase())) matches.push({ href: `${ctx.orgPath}${path}`, kind: 'Page', label });
        }
      }
      return reply.type('text/html; charset=utf-8').send(renderFragment(<PaletteResults matches={matches} typed={q !== ''} />));
    },
  );
}

/** A run that is not there (or not this organization's) is no match. */
function notFound(error: unknown): undefined {
  if (error instanceof ApiCallError && error.status === 404) return undefined;
  throw error;
}

function PaletteResults({ matches, typed }: { matches: Match[]; typed: boolean }) {
  if (!typed) return null;
  if (!matches.length) return <li class="muted">Nothing matches.</li>;
  return (
    <>
      {matches.map((m) => (
        <li key={m.href}>
          <a href={m.href}>
            <span class="muted">{m.kind}</span> {m.label} {m.detail && <span class="muted">· {m.detail}</span>}
          </a>
        </li>
      ))}
    </>
  );
}
