// A browser's side of the web console, for tests: requests with a cookie and form posts through the
// app's inject, and signing in as the sign-in form does.

import http from 'node:http';
import type { TestApp } from './app.ts';

export interface ConsolePage {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  location?: string;
  cookies: { name: string; value: string; httpOnly?: boolean; sameSite?: string; path?: string; maxAge?: number }[];
}

export interface ConsoleRequest {
  cookie?: string;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** `app` is asked for at each request, so the helper can be made before the app is started. */
export function consoleBrowser(app: () => TestApp['app']) {
  const request = async (method: 'GET' | 'POST', url: string, options: ConsoleRequest = {}): Promise<ConsolePage> => {
    const res = await app().inject({
      method,
      url,
      headers: {
        ...(options.cookie ? { cookie: options.cookie } : {}),
        ...(options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...options.headers,
      },
      ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
    });
    return {
      status: res.statusCode,
      headers: res.headers,
      body: res.body,
      location: res.headers.location as string | undefined,
      cookies: res.cookies as ConsolePage['cookies'],
    };
  };

  /** Signs in with `apiKey` as a browser would: the form first (its token and cookie), then the POST. */
  const signIn = async (apiKey: string) => {
    const form = await request('GET', '/sign-in');
    const signInCookie = form.cookies.find((c) => c.name === 'plinth_sign_in')!;
    const signInToken = /name="_signin" value="([^"]+)"/.exec(form.body)![1];
    const res = await request('POST', '/sign-in', { cookie: `plinth_sign_in=${signInCookie.value}`, form: { apiKey, _signin: signInToken } });
    const session = res.cookies.find((c) => c.name === 'plinth_session');
    return { res, cookie: session ? `plinth_session=${session.value}` : undefined, session };
  };

  /** Posts a form of the page at `pageUrl` to `action` as its browser would: the page first, for its anti-forgery token. */
  const submit = async (pageUrl: string, action: string, form: Record<string, string>, cookie: string) => {
    const page = await request('GET', pageUrl, { cookie });
    return request('POST', action, { cookie, form: { _csrf: csrfOf(page.body), ...form } });
  };

  return { request, signIn, submit };
}

/** The anti-forgery token of the first form of a page. */
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];

export interface StreamEvent {
  event: string;
  id?: string;
  data: string;
}

/** One SSE event block: its fields, several data lines joined by new lines; undefined for a comment. */
function parseEvent(block: string): StreamEvent | undefined {
  const fields: Record<string, string> = {};
  for (const line of block.split('\n').filter((l) => !l.startsWith(':'))) {
    const name = line.slice(0, line.indexOf(':'));
    const value = line.slice(line.indexOf(':') + 2);
    fields[name] = name === 'data' && name in fields ? `${fields[name]}\n${value}` : value;
  }
  return fields.event ? { event: fields.event, id: fields.id, data: fields.data ?? '' } : undefined;
}

/**
 * Reads a console event stream over a real connection (as EventSource would: cookie, Last-Event-ID),
 * calling `onEvent` with each event as it arrives, until the server ends it or `onEvent` answers true.
 * `onOpen` runs once the stream's head has come. (node:http, not fetch: an in-process undici fetch of
 * a stream has hung here.)
 */
export function readConsoleEvents(
  url: string,
  cookie: string,
  onEvent: (e: StreamEvent) => unknown,
  options: { lastEventId?: string; onOpen?: () => Promise<void> } = {},
): Promise<{ status: number; events: StreamEvent[]; raw: string }> {
  return new Promise((resolve, reject) => {
    const headers = { accept: 'text/event-stream', cookie, ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}) };
    const req = http.get(url, { headers }, (res) => {
      const events: StreamEvent[] = [];
      let buffer = '';
      let raw = '';
      const finish = () => resolve({ status: res.statusCode ?? 0, events, raw });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        raw += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const event = parseEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) {
            events.push(event);
            if (onEvent(event) === true) {
              req.destroy();
              return finish();
            }
          }
        }
      });
      res.on('end', finish);
      options.onOpen?.().catch((error) => {
        req.destroy();
        reject(error);
      });
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`no end of ${url} within 20 s`)));
  });
}
