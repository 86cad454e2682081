import { createHmac, timingSafeEqual } from 'node:crypto';
import type { GitProvider } from '../platform/db/enums.ts';

/**
 * Push webhooks of GitHub, GitLab and Gitea: which provider sent a delivery, whether it is authentic,
 * and what it pushed. Pure functions over the headers and the raw body bytes.
 */
export type Headers = Record<string, string | string[] | undefined>;

export interface Delivery {
  provider: Extract<GitProvider, 'GITHUB' | 'GITLAB' | 'GITEA'>;
  event: string;
  deliveryId: string;
}

const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * detectDelivery names the provider by its own headers first: Gitea also sends GitHub's `X-GitHub-Event`
 * and `X-Hub-Signature-256`, so `X-Gitea-Event` is looked at before them. Undefined: not a delivery of
 * a provider Plinth knows.
 */
export function detectDelivery(h: Headers): Delivery | undefined {
  const gitea = header(h, 'x-gitea-event');
  if (gitea) return { provider: 'GITEA', event: gitea, deliveryId: header(h, 'x-gitea-delivery') ?? '' };
  const gitlab = header(h, 'x-gitlab-event');
  if (gitlab) return { provider: 'GITLAB', event: gitlab, deliveryId: header(h, 'x-gitlab-event-uuid') ?? header(h, 'x-gitlab-webhook-uuid') ?? '' };
  const github = header(h, 'x-github-event');
  if (github) return { provider: 'GITHUB', event: github, deliveryId: header(h, 'x-github-delivery') ?? '' };
  return undefined;
}

function constantTimeEqual(a: string, b: string): boolean {
  // Hashing first makes both sides the same length, so the comparison's time says nothing of the secret.
  const ha = createHmac('sha256', 'plinth-compare').update(a).digest();
  const hb = createHmac('sha256', 'plinth-compare').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/**
 * verifyDelivery checks the delivery against the source's webhook secret: GitHub and Gitea sign the raw
 * body with HMAC-SHA256 (`X-Hub-Signature-256: sha256=<hex>`, `X-Gitea-Signature: <hex>`); GitLab sends
 * the secret itself in `X-Gitlab-Token`. Every comparison is constant-time.
 */
export function verifyDelivery(delivery: Delivery, h: Headers, rawBody: Buffer, secret: string): boolean {
  if (delivery.provider === 'GITLAB') return constantTimeEqual(header(h, 'x-gitlab-token') ?? '', secret);
  const expected = createHmac('sha256', secret).update(rawBody).digest('hex');
  const given = delivery.provider === 'GITEA' ? (header(h, 'x-gitea-signature') ?? '') : (header(h, 'x-hub-signature-256') ?? '').replace(/^sha256=/, '');
  return constantTimeEqual(given.toLowerCase(), expected);
}

/** What a push event says: the branch, the commit it now points at, who pushed it, and the paths it touched. */
export interface Push {
  branch: string;
  commitSha: string;
  author: string;
  message: string;
  /** Every path the pushed commits touched; null when the payload cannot tell (too many commits, none listed). */
  changedPaths: string[] | null;
}

const isPushEvent = (d: Delivery) => (d.provider === 'GITLAB' ? d.event === 'Push Hook' : d.event === 'push');

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

function pathsOf(commits: unknown): string[] {
  const paths = new Set<string>();
  for (const c of Array.isArray(commits) ? commits : []) {
    for (const kind of ['added', 'removed', 'modified']) {
      const list = obj(c)[kind];
      if (Array.isArray(list)) for (const p of list) if (typeof p === 'string') paths.add(p);
    }
  }
  return [...paths];
}

/** GitHub lists at most 2048 commits of a push, GitLab 20: past those, which paths changed is unknown. */
const LISTED_COMMITS = { GITHUB: 2048, GITEA: 2048, GITLAB: 20 } as const;

/**
 * parsePush reads a branch push from a verified delivery's JSON. Undefined for anything else: another
 * event, a tag, a deleted branch.
 */
export function parsePush(delivery: Delivery, body: unknown): Push | undefined {
  if (!isPushEvent(delivery)) return undefined;
  const b = obj(body);
  const ref = str(b.ref);
  const after = str(b.after) ?? str(b.checkout_sha);
  if (!ref?.startsWith('refs/heads/') || !after || !/^[0-9a-f]{40,64}$/.test(after) || /^0+$/.test(after) || b.deleted === true) return undefined;
  const commits = Array.isArray(b.commits) ? b.commits : [];
  const head = obj(b.head_commit ?? commits.find((c) => obj(c).id === after) ?? commits[commits.length - 1]);
  const author = str(obj(head.author).name) ?? str(b.user_name) ?? str(obj(b.pusher).name) ?? str(obj(b.pusher).login) ?? 'unknown';
  const total = typeof b.total_commits_count === 'number' ? b.total_commits_count : commits.length;
  const complete = commits.length > 0 && commits.length >= total && commits.length < LISTED_COMMITS[delivery.provider];
  return {
    branch: ref.slice('refs/heads/'.length),
    commitSha: after,
    author: author.slice(0, 200),
    message: (str(head.message) ?? '').split('\n')[0].slice(0, 200),
    changedPaths: complete ? pathsOf(commits) : null,
  };
}

/** touches: whether a push changed anything under a stack's path (everything, when the push cannot say). */
export function touches(push: Push, stackPath: string | undefined): boolean {
  const dir = (stackPath ?? '').replace(/^\.?\/+/, '').replace(/\/+$/, '');
  if (!dir || dir === '.' || push.changedPaths === null) return true;
  return push.changedPaths.some((p) => p === dir || p.startsWith(`${dir}/`));
}
