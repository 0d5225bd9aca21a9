/**
 * The `Prefer` request header (RFC 7240), for its `wait` preference only.
 *
 * RFC 7240 makes preferences optional for the server: one it cannot understand or comply with
 * is ignored, never an error. So a malformed header, a `wait` without a whole number of
 * seconds, or `wait=0` means "no wait" and the request is answered as if the header were
 * absent; a wait longer than the server allows is shortened to its maximum (and
 * `Preference-Applied` says how long it really was).
 */

/** Seconds between status polls that we suggest in `Retry-After` while an execution is open. */
export const POLL_HINT_SECONDS = 1;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Splits on `sep` outside quoted strings. */
function splitOutsideQuotes(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (quoted && c === '\\' && i + 1 < s.length) {
      cur += c + (s[i + 1] as string);
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === sep && !quoted) {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

function unquote(word: string): string | null {
  if (!word.startsWith('"')) return TOKEN.test(word) ? word : null;
  if (word.length < 2 || !word.endsWith('"')) return null;
  return word.slice(1, -1).replace(/\\(.)/g, '$1');
}

/**
 * The preferences named in one or more `Prefer` header values, lower-cased names to values
 * (`''` for a preference given without one). Per RFC 7240 §2 only the first instance of a
 * repeated preference counts; malformed entries are skipped.
 */
export function parsePreferences(values: readonly string[]): Map<string, string> {
  const prefs = new Map<string, string>();
  for (const header of values) {
    for (const item of splitOutsideQuotes(header, ',')) {
      const [head] = splitOutsideQuotes(item, ';');
      const eq = (head ?? '').indexOf('=');
      const name = (eq < 0 ? (head ?? '') : (head ?? '').slice(0, eq)).trim().toLowerCase();
      if (!TOKEN.test(name) || prefs.has(name)) continue;
      if (eq < 0) {
        prefs.set(name, '');
        continue;
      }
      const value = unquote((head ?? '').slice(eq + 1).trim());
      if (value !== null) prefs.set(name, value);
    }
  }
  return prefs;
}

/**
 * Seconds to wait for, from the request's `Prefer` headers: 0 when there is no usable `wait`
 * preference, else the asked delta-seconds capped at `maxSeconds`.
 */
export function waitSeconds(values: readonly string[], maxSeconds: number): number {
  const raw = parsePreferences(values).get('wait');
  if (raw === undefined || !/^[0-9]{1,10}$/.test(raw)) return 0;
  return Math.min(Number(raw), Math.max(0, Math.floor(maxSeconds)));
}

/** The `Preference-Applied` header for a wait that was honoured. */
export const preferenceApplied = (seconds: number): Record<string, string> =>
  seconds > 0 ? { 'preference-applied': `wait=${seconds}` } : {};
