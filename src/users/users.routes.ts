import type { App } from '../platform/http/app.ts';
import { Envelope } from '../platform/schema.ts';
import { User } from './users.schema.ts';
import { getCurrentUser } from './users.service.ts';

export async function userRoutes(app: App) {
  const tags = ['users'];

  app.get(
    '/users/me',
    {
      config: { permission: 'authenticated' },
      schema: { tags, operationId: 'getCurrentUser', summary: 'The calling user', response: { 200: Envelope(User) } },
    },
    async (request) => ({ data: await getCurrentUser(app.db, request.principal) }),
  );
}
