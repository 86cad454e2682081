/** Shapes that backtrack catastrophically in a backtracking engine, each with a value that makes them. */
export const HOSTILE: { shape: string; value: string }[] = [
  { shape: '(a+)+$', value: 'a'.repeat(48) + '!' },
  { shape: '(a|aa)+$', value: 'a'.repeat(48) + '!' },
  { shape: '(.*a){20}', value: 'a'.repeat(19) + '!'.repeat(48) },
  { shape: '^(a|a)*$', value: 'a'.repeat(48) + '!' },
  { shape: '^(\\w+\\s?)*$', value: 'word '.repeat(12) + '!' },
];
export const PATTERNS_PER_INPUT = 20;
export const INPUTS = 50;

/**
 * An object of 50 string inputs with 20 patterns each, every pattern a hostile shape made distinct by
 * `tag` (so that none is compiled already), and a value of the object that fails all 1,000 patterns.
 */
export function hostileSchema(tag: string) {
  const properties = Array.from({ length: INPUTS }, (_, i) => ({
    id: `p${i}`,
    label: `P${i}`,
    type: 'string',
    patterns: Array.from({ length: PATTERNS_PER_INPUT }, (_, k) => ({ pattern: `(?:${HOSTILE[i % HOSTILE.length].shape})|_${tag}_${i}_${k}`, message: 'no' })),
  }));
  const value = Object.fromEntries(properties.map((p, i) => [p.id, HOSTILE[i % HOSTILE.length].value]));
  return { schema: { id: 'hostile', label: 'Hostile', type: 'object', properties }, value };
}
