import { sql, type Selectable } from 'kysely';
import type { UsersTable } from '../platform/db/database.ts';
import type { Executor } from '../platform/db/db.ts';
import type { GlobalRole } from '../platform/db/enums.ts';
import type { User } from './users.schema.ts';

export type UserRow = Selectable<UsersTable>;

export function userRowToUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    globalRole: row.global_role,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.full_name ? { fullName: row.full_name } : {}),
    ...(row.short_name ? { shortName: row.short_name } : {}),
  };
}

export function findUserById(db: Executor, id: string) {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserByEmail(db: Executor, email: string) {
  return db.selectFrom('users').selectAll().where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst();
}

/** insertUserIfAbsent creates a user for the email, or returns the one that already has it (any case). */
export async function insertUserIfAbsent(db: Executor, values: { id: string; email: string; globalRole?: GlobalRole }) {
  await db
    .insertInto('users')
    .values({ id: values.id, email: values.email, global_role: values.globalRole ?? 'USER' })
    .onConflict((oc) => oc.expression(sql`lower(email)`).doNothing())
    .execute();
  return (await findUserByEmail(db, values.email))!;
}

export function updateUserGlobalRole(db: Executor, id: string, globalRole: GlobalRole) {
  return db.updateTable('users').set({ global_role: globalRole, updated_at: new Date() }).where('id', '=', id).execute();
}
