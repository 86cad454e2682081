// The console reads and writes through the HTTP API itself, in-process (Fastify's inject), with the
// session's API key: every page shows exactly what the API lets that key see, every action passes the
// API's permission checks, validation and audit log, and there is no second way to do either.

import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/app.ts';

/** An API answer other than 2xx, with its ErrorBody. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

export type Query = Record<string, string | number | undefined>;

export interface ApiCaller {
  get<T = any>(path: string, query?: Query): Promise<T>;
  post<T = any>(path: string, body?: unknown): Promise<T>;
  put<T = any>(path: string, body?: unknown): Promise<T>;
  patch<T = any>(path: string, body?: unknown): Promise<T>;
  delete<T = any>(path: string): Promise<T>;
  /** A GET the API answers with a redirect (an OAuth start): where it sends the browser, and the cookies it sets on the way. */
  redirect(path: string, query?: Query): Promise<ApiRedirect>;
}

export interface ApiRedirect {
  location: string;
  cookies: { name: string; value: string; path?: string; maxAge?: number; httpOnly?: boolean; secure?: boolean; sameSite?: string }[];
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * An ApiCaller acting with `token` for the browser's request `from`: its address goes along, so failed
 * authentications are counted against the browser, not against loopback.
 */
export function apiCaller(app: App, from: FastifyRequest, token: string, organizationId?: string): ApiCaller {
  const send = (method: Method, path: string, query?: Query, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (organizationId) headers['x-organization-id'] = organizationId;
    if (body !== undefined) headers['content-type'] = 'application/json';
    return app.inject({
      method,
      url: path,
      query: definedOnly(query),
      headers,
      remoteAddress: from.ip,
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  };
  const call = async (method: Method, path: string, query?: Query, body?: unknown) => {
    const res = await send(method, path, query, body);
    const parsed = jsonOf(res);
    // Anything but a 2xx answer with a JSON body (or a 204) is a failure: never data read from an HTML page or a redirect.
    if (res.statusCode < 200 || res.statusCode >= 300 || (res.statusCode !== 204 && parsed === undefined)) throw failureOf(res.statusCode, parsed);
    return parsed;
  };
  const redirect = async (path: string, query?: Query): Promise<ApiRedirect> => {
    const res = await send('GET', path, query);
    const location = res.headers.location;
    if (res.statusCode !== 302 || typeof location !== 'string') throw failureOf(res.statusCode, jsonOf(res));
    return { location, cookies: res.cookies as ApiRedirect['cookies'] };
  };
  return {
    get: (path, query) => call('GET', path, query),
    post: (path, body) => call('POST', path, undefined, body),
    put: (path, body) => call('PUT', path, undefined, body),
    patch: (path, body) => call('PATCH', path, undefined, body),
    delete: (path) => call('DELETE', path),
    redirect,
  };
}

function jsonOf(res: { headers: Record<string, unknown>; body: string; json(): any }) {
  return String(res.headers['content-type'] ?? '').startsWith('application/json') && res.body ? res.json() : undefined;
}

function failureOf(status: number, parsed: any): ApiCallError {
  return new ApiCallError(status, parsed?.code ?? 'Api:Request:FAILED', parsed?.message ?? `The API answered ${status}`, detailLines(parsed?.details));
}

/** An ErrorBody's detail sections as lines a page can list: a list's items, an object as its JSON. */
function detailLines(sections: unknown): string[] {
  if (!Array.isArray(sections)) return [];
  return sections.flatMap((section) => {
    if (Array.isArray(section?.items)) return section.items.map(String);
    return section?.object ? [`${section.title}: ${JSON.stringify(section.object)}`] : [];
  });
}

function definedOnly(query: Query | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined && value !== '') out[key] = String(value);
  return out;
}
