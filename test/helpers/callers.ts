import assert from 'node:assert/strict';
import type { Role } from '../../src/platform/auth/roles.ts';
import type { TestApp } from './app.ts';

/** Headers that make the super-admin act in another organization. */
export const inOrg = (organizationId: string) => ({ 'x-organization-id': organizationId });

/** createOrganization makes an organization as the super-admin (who becomes its OWNER) and returns its id. */
export async function createOrganization(t: TestApp, name = 'Other org'): Promise<string> {
  const res = await t.call('POST', '/organizations', { body: { data: { name, billingEmail: 'billing@example.com' } } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data.id;
}

export interface ServiceAccountCaller {
  token: string;
  serviceAccountId: string;
  keyId: string;
}

/** serviceAccountCaller creates a service account with the role (in `organizationId`, else Default) and a key for it. */
export async function serviceAccountCaller(t: TestApp, role: Role, organizationId?: string): Promise<ServiceAccountCaller> {
  const headers = organizationId ? inOrg(organizationId) : undefined;
  const sa = await t.call('POST', '/service-accounts', { headers, body: { data: { name: `sa-${role.toLowerCase()}`, role } } });
  assert.equal(sa.status, 201, JSON.stringify(sa.body));
  const key = await t.call('POST', '/api-keys', { headers, body: { data: { name: 'test key', serviceAccountId: sa.body.data.id } } });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  return { token: key.body.data.token, serviceAccountId: sa.body.data.id, keyId: key.body.data.id };
}

export interface UserCaller {
  token: string;
  userId: string;
  membershipId: string;
  email: string;
}

/** userCaller invites a user through the API, then the super-administrator issues them a first key. */
export async function userCaller(t: TestApp, email: string, role: Role, organizationId?: string): Promise<UserCaller> {
  const headers = organizationId ? inOrg(organizationId) : undefined;
  const res = await t.call('POST', '/memberships', { headers, body: { data: { email, role } } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const key = await t.call('POST', '/api-keys', { headers, body: { data: { name: 'first key', userId: res.body.data.userId } } });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  return { token: key.body.data.token, userId: res.body.data.userId, membershipId: res.body.data.id, email };
}

/** Asserts an ErrorBody with the status, a `<Namespace>:<Entity>:<REASON>` code and the request id. */
export function assertError(res: { status: number; body: any; headers: Record<string, unknown> }, status: number, code?: string | RegExp) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.body.code, /^[A-Za-z]+:[A-Za-z]+:[A-Z_]+$/);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(res.body.requestId, res.headers['x-request-id']);
  if (typeof code === 'string') assert.equal(res.body.code, code);
  else if (code) assert.match(res.body.code, code);
}
