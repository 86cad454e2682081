// A browser's side of the web console, for tests: requests with a cookie and form posts through the
// app's inject, and signing in as the sign-in form does.

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
