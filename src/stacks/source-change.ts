import type { StackSource, StackSourceChange } from './stacks.schema.ts';

/**
 * changedSource is the source a PATCH leaves a stack with: each field the change gives is set, a null
 * one is cleared, and one it leaves out is kept, so that a change of branch keeps the repository.
 */
export function changedSource(current: StackSource | undefined, change: StackSourceChange): StackSource {
  const next: Record<string, unknown> = { ...current };
  for (const [field, value] of Object.entries(change)) {
    if (value === null) delete next[field];
    else if (value !== undefined) next[field] = value;
  }
  return next as StackSource;
}
