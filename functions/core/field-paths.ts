/**
 * Reading a raw node's fields by path, and writing the paths problems are reported at: shared by
 * the modules that look inside a node before its kind has validated it (owner secrets, resume
 * URLs), which import no node kind.
 */

/** The value at a dotted path (`poll.url`); undefined when any part is missing or not an object. */
export function valueAt(raw: Readonly<Record<string, unknown>>, dotted: string): unknown {
  let cur: unknown = raw;
  for (const key of dotted.split('.')) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** `base.key`, or `base["a key"]` for a key that is not an identifier. */
export function keyPath(base: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}
