import type { App } from '../platform/http/app.ts';
import { Envelope } from '../platform/schema.ts';
import { User, UserAuthSettings, UserIdParams } from './users.schema.ts';
import { getCurrentUser, getUserAuthSettings } from './users.service.ts';

export async function userRoutes(app: App) {
  const tags = ['users'];

  app.get('/users/me', {
    config: { permission: 'authenticated' },
    schema: { tags, summary: 'The calling user', response: { 200: Envelope(User) } },
  }, async (request) => ({ data: await getCurrentUser(app.db, request.principal) }));

  app.get('/users/:userId/identities', {
    config: { permission: 'authenticated' },
    schema: { tags, summary: "How a user signs in (own, or ADMIN+ for the organization's members)", params: UserIdParams, response: { 200: Envelope(UserAuthSettings) } },
  }, async (request) => ({ data: await getUserAuthSettings(app.db, request.principal, request.params.userId) }));
}
