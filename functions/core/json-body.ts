/**
 * Request bodies as JSON, the one way every route reads them: the media type a non-empty body
 * must have (a body sent as anything but JSON answers 415, on every route that takes one), and
 * the parse, which refuses what `JSON.parse` would silently settle: the same key twice in one
 * object (JSON.parse keeps the last, so `{"a":1,"a":2}` meant a to one reader and another to the
 * next). Each route answers the reason in its own 400.
 */
import { AppError } from './errors';

/** Blank in JSON's sense: a body of only these reads as no body. */
const JSON_WHITESPACE = /^[ \t\r\n]*$/;
/** application/json and any application/<x>+json. */
const JSON_MEDIA_TYPE = /^application\/(?:json|[a-z0-9!#$&^_.+-]+\+json)$/;

/** Whether a body of only JSON whitespace (or none): it reads as no body. */
export const isBlankJson = (text: string | null): boolean => text === null || JSON_WHITESPACE.test(text);

/** Whether a content type names JSON (none at all is taken as JSON, as curl's `-d` sends). */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return JSON_MEDIA_TYPE.test(essence);
}

/** A non-empty body sent as anything but JSON: 415, the same on every route that takes a body. */
export function assertJsonMediaType(text: string | null, contentType: string | undefined): void {
  if (!isBlankJson(text) && !isJsonMediaType(contentType))
    throw new AppError('UnsupportedMediaType', 'the body must be JSON (Content-Type: application/json)');
}

/**
 * Why a body is not one JSON value: `path` is where (`(body)` for the body as a whole, else the
 * object holding a key twice, as `a.b[2]`), `reason` says what, `detail` both in one line.
 */
export interface JsonProblem {
  ok: false;
  path: string;
  reason: string;
  detail: string;
}

export type ParsedJson = { ok: true; value: unknown } | JsonProblem;

/** Where a duplicated key sits: `a.b[2]` style, the body itself as `(body)`. */
function pathText(path: readonly (string | number)[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? '(body)' : out;
}

interface Frame {
  /** Keys seen so far, for an object; null for an array. */
  keys: Set<string> | null;
  /** Where it sits in its parent: the key it is the value of, or its index. */
  at: string | number | null;
  /** An object's last key, an array's index: what a value opened now sits at. */
  current: string | number;
  expectKey: boolean;
}

/**
 * The first key an object of `text` holds twice, with where, or null. `text` must be valid JSON
 * (JSON.parse took it): one pass over its tokens, each key decoded as JSON.parse decodes it, so
 * `"a"` and `"\u0061"` are the same key.
 */
export function duplicateKey(text: string): { key: string; at: string } | null {
  const stack: Frame[] = [];
  const top = (): Frame | undefined => stack[stack.length - 1];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '[') {
      const parent = top();
      stack.push({ keys: c === '{' ? new Set() : null, at: parent ? parent.current : null, current: 0, expectKey: c === '{' });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      const f = top();
      if (f?.keys) f.expectKey = true;
      else if (f && typeof f.current === 'number') f.current += 1;
    } else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const f = top();
      if (f?.keys && f.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (f.keys.has(key)) return { key, at: pathText(stack.slice(1).map((x) => x.at as string | number)) };
        f.keys.add(key);
        f.current = key;
        f.expectKey = false;
      }
      i = end;
    }
  }
  return null;
}

/**
 * The body's JSON value, or why it is not one: not JSON at all, or an object with a key twice
 * (named, with where it is). The caller decides what an empty body means.
 */
export function parseJson(text: string): ParsedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, path: '(body)', reason: 'body is not valid JSON', detail: 'body is not valid JSON' };
  }
  const dup = duplicateKey(text);
  if (dup === null) return { ok: true, value };
  const reason = `has the key "${dup.key}" twice`;
  return { ok: false, path: dup.at, reason, detail: `${dup.at === '(body)' ? 'body' : dup.at} ${reason}` };
}

/**
 * An owner route's JSON body: undefined when there is none (a blank body), else its value, a
 * JSON `null` included (which no request object is); 400 Invalid Request naming what is wrong.
 */
export function ownerRequestBody(body: string | null): unknown {
  if (isBlankJson(body)) return undefined;
  const parsed = parseJson(body as string);
  if (!parsed.ok) throw new AppError('InvalidRequest', [{ path: parsed.path, reason: parsed.reason }]);
  return parsed.value;
}
