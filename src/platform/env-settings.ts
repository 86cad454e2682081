/**
 * positiveIntFrom reads a whole-number setting of at least 1 (and at most `max`, when given) from the
 * environment; unset or empty: the fallback. Anything else stops the start with a message naming the
 * variable.
 */
export function positiveIntFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, max?: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  if (max !== undefined && value > max) throw new Error(`${name} must be at most ${max}, got "${raw}"`);
  return value;
}
