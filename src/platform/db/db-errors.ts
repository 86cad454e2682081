// PostgreSQL errors a service turns into typed ones (src/platform/errors.ts), by their SQLSTATE code.

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const DEADLOCK_DETECTED = '40P01';

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/** A unique constraint refused the write: a duplicate givenId, or a second value for the same parent. */
export function isUniqueViolation(error: unknown): boolean {
  return codeOf(error) === UNIQUE_VIOLATION;
}

/** A foreign key refused the write: what it references was deleted meanwhile, or something still uses the row. */
export function isForeignKeyViolation(error: unknown): boolean {
  return codeOf(error) === FOREIGN_KEY_VIOLATION;
}

/** PostgreSQL broke a cycle of transactions waiting on each other's locks by aborting this one: it may run again. */
export function isDeadlock(error: unknown): boolean {
  return codeOf(error) === DEADLOCK_DETECTED;
}

/** rethrowAs runs a write and replaces the matching database error with a typed one. */
export async function rethrowAs<T>(write: Promise<T>, when: (error: unknown) => boolean, make: () => Error): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (when(error)) throw make();
    throw error;
  }
}

/** A PATCH that supplies no field changes nothing, not even updatedAt. */
export function isEmptyPatch(changes: object): boolean {
  return Object.values(changes).every((v) => v === undefined);
}
