import createClient, { type Client } from 'openapi-fetch';
import { PlinthApiError, toApiError } from './errors.js';
import type { paths } from './generated/openapi.js';
import { followLogs, readLogLines, type FollowOptions } from './logs.js';
import { pages, type ListItem, type ListParams, type ListPath, type Page } from './paginate.js';
import { retryingFetch, type RetryOptions } from './retry.js';
import { followRunLogs, type FollowRunOptions, type RunLogLine } from './run-logs.js';
import { waitForRun, waitingStep, type DecideOptions, type StartRunOptions, type WaitOptions } from './runs.js';
import type { LogLine, PipelineRun, StepExecution } from './types.js';

export interface PlinthOptions {
  /** Where Plinth answers, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An API key (`plk_…`). */
  token?: string;
  /** Act in this organization (a user key only; sent as X-Organization-Id). */
  organizationId?: string;
  /** Retries of 429 and 5xx answers (set `attempts: 1` for none). */
  retry?: RetryOptions;
  /** The fetch to send requests with (default: the global one). */
  fetch?: typeof fetch;
  userAgent?: string;
}

type Answer = { data?: unknown; error?: unknown; response: Response };

/** unwrap returns the data of a successful openapi-fetch answer and throws a PlinthApiError otherwise. */
export async function unwrap<R extends Answer>(answer: Promise<R>): Promise<Exclude<R['data'], undefined>> {
  const { data, error, response } = await answer;
  if (!response.ok) throw toApiError(response, error);
  return data as Exclude<R['data'], undefined>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * noRedirects sends every request with `redirect: 'manual'` and turns a redirect into a PlinthApiError
 * (`Sdk:Response:REDIRECT`) that names where it pointed. Followed, it would repeat the request, API key
 * included, to wherever `Location` says: a key must reach only the host it was given for. The check sits
 * outside the retries, so a redirect is neither retried nor followed.
 */
function noRedirects(inner: typeof fetch, retry: RetryOptions | undefined): (request: Request) => Promise<Response> {
  const send = retryingFetch((request) => inner(request, { redirect: 'manual' }), retry);
  return async (request) => {
    const response = await send(request);
    if (response.type !== 'opaqueredirect' && !REDIRECTS.has(response.status)) return response;
    await response.body?.cancel();
    const location = response.headers.get('location');
    throw new PlinthApiError(response.status, {
      code: 'Sdk:Response:REDIRECT',
      message: `${request.method} ${request.url} was redirected ${location === null ? 'without a Location' : `to ${location}`}, and redirects are not followed so that the API key goes nowhere else: set baseUrl to where Plinth answers`,
    });
  };
}

/** The Plinth client: `api` is the typed openapi-fetch client; the rest is what it cannot do alone. */
export class Plinth {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  /** The retrying fetch every call goes through, with the credential headers added. */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>;

  constructor(readonly options: PlinthOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'plinth-sdk' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.organizationId) headers['x-organization-id'] = options.organizationId;
    const send = noRedirects(options.fetch ?? globalThis.fetch, options.retry);
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: send, headers });
    this.fetch = (path, init = {}) => {
      const merged = new Headers(init.headers);
      for (const [name, value] of Object.entries(headers)) if (!merged.has(name)) merged.set(name, value);
      return send(new Request(`${this.baseUrl}${path}`, { ...init, headers: merged }));
    };
  }

  /**
   * paginate yields every item of a list, page after page, e.g.
   * `for await (const run of plinth.paginate('/pipeline-runs', { query: { stackId } }))`.
   */
  async *paginate<P extends ListPath>(path: P, params?: ListParams<P>): AsyncGenerator<ListItem<P>> {
    for await (const page of this.pages(path, params)) yield* page.data;
  }

  /** pages yields the pages of a list themselves (for `meta.totalCount`, or to show progress). */
  pages<P extends ListPath>(path: P, params?: ListParams<P>): AsyncGenerator<Page<ListItem<P>>> {
    const p = (params ?? {}) as { path?: Record<string, string>; query?: Record<string, unknown> };
    // The generic path defeats openapi-fetch's per-path overloads; ListPath guarantees the shape.
    const get = this.api.GET as unknown as (path: string, init: unknown) => Promise<Answer>;
    return pages(
      (cursor) => unwrap(get(path, { params: { path: p.path, query: { ...p.query, ...(cursor ? { cursor } : {}) } } })) as Promise<Page<ListItem<P>>>,
    );
  }

  /** Runs: start one, wait for it, decide on its approvals, follow its logs. */
  readonly runs = {
    get: (id: string): Promise<PipelineRun> => unwrap(this.api.GET('/pipeline-runs/{id}', { params: { path: { id } } })).then((b) => b.data),
    wait: (id: string, options?: WaitOptions): Promise<PipelineRun> => waitForRun((runId) => this.runs.get(runId), id, options),
    /** start queues a run of the stack (its change pipeline; its destroy pipeline for `action: 'destroy'`) and returns it. */
    start: (stackId: string, options: StartRunOptions = {}): Promise<PipelineRun> => {
      const { autoApprove, ...rest } = options;
      const data = { ...rest, ...(autoApprove !== undefined ? { autoapprove: autoApprove } : {}) };
      return unwrap(this.api.POST('/stacks/{id}/pipeline-run', { params: { path: { id: stackId } }, body: { data } })).then((b) => b.data);
    },
    /** Every step execution of the run, oldest first, retries included. */
    steps: async (runId: string): Promise<StepExecution[]> => {
      const steps: StepExecution[] = [];
      for await (const step of this.paginate('/pipeline-runs/{id}/step-executions', { path: { id: runId }, query: { limit: 200 } })) steps.push(step);
      return steps;
    },
    /**
     * approve approves the step of the run that waits for approval (`stepId` names it when several
     * wait) and returns its execution; none waiting, or several, is a PlinthApiError 409.
     */
    approve: (runId: string, options: DecideOptions = {}): Promise<StepExecution> => this.decide('approve', runId, options),
    /** reject rejects the step that waits for approval, as approve picks it; the run fails. */
    reject: (runId: string, options: DecideOptions = {}): Promise<StepExecution> => this.decide('reject', runId, options),
    /**
     * followLogs yields every line of every step of the run, each with its step, step after step as
     * each starts, and returns the run once it has ended or waits for approval. While the API does not
     * answer it tries again for `reconnectForMs` (5 minutes), calling `onReconnect` before each attempt.
     */
    followLogs: (runId: string, options?: FollowRunOptions): AsyncGenerator<RunLogLine, PipelineRun> =>
      followRunLogs({ run: (id) => this.runs.get(id), steps: (id) => this.runs.steps(id), send: this.fetch }, runId, options),
  };

  private async decide(verb: 'approve' | 'reject', runId: string, options: DecideOptions): Promise<StepExecution> {
    const step = waitingStep(runId, await this.runs.steps(runId), options.stepId);
    const path = verb === 'approve' ? '/pipeline-step-executions/{id}/approve' : '/pipeline-step-executions/{id}/reject';
    return (await unwrap(this.api.POST(path, { params: { path: { id: step.id } } }))).data;
  }

  /** Logs: follow a step execution's lines as they are written, resuming over broken connections. */
  readonly logs = {
    /** Every line stored so far (after seq `after`), page after page; it does not wait for more. */
    lines: (executionId: string, after = 0): AsyncGenerator<LogLine> =>
      readLogLines(
        (seq) => unwrap(this.api.GET('/pipeline-step-executions/{id}/logs', { params: { path: { id: executionId }, query: { after: seq } } })),
        after,
      ),
    follow: (executionId: string, options?: FollowOptions): AsyncGenerator<LogLine, string | undefined> => followLogs(this.fetch, executionId, options),
  };
}

/** createPlinth makes a client; see PlinthOptions. */
export function createPlinth(options: PlinthOptions): Plinth {
  return new Plinth(options);
}

export { PlinthApiError };
