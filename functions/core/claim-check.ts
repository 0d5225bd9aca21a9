/**
 * The claim check: values too large for an execution's record live in the bucket, and the
 * record keeps a small reference. A DynamoDB item holds at most 400 KB (names and values
 * together), and an execution's record carries its inputs, its outputs, the error messages and
 * the trace beside keys, times and the callback's delivery log; without this, a write past the
 * limit fails the execution with an opaque ValidationException on AWS (dynalite refuses it too).
 *
 * Each write decides on its own values (the create: inputs; the terminal move: outputs, error
 * messages, trace): when they take more than INLINE_VALUES_MAX_BYTES in the item, the largest
 * go to one JSON object under the execution's prefix, named by a hash of its text, until what
 * stays fits. The store writes the object first and the record second (a crash between leaves an
 * object nothing points at, never a record pointing at nothing) and resolves references on every
 * read, so views answer alike for a small or a large value.
 *
 * Pure: sizes, the decision, the object's name and text. The store does the I/O.
 */
import { createHash } from 'node:crypto';
import type { Execution } from './types';

/** DynamoDB's item size limit (400 KB, counted as 1024-byte KB: dynalite refuses past 409,600 bytes too). */
export const ITEM_MAX_BYTES = 409_600;

/**
 * Most the values of one write may take in the item. Two writes carry values (the create, and
 * the terminal move or the trace of a cancelled run), so values take at most 2 × 128 KiB =
 * 256 KiB of the 400 KiB, leaving 144 KiB for what else the record holds: keys, ids and times
 * (under 1 KiB), the callback URL, the delivery log (at most 20 attempts), asset references and
 * visible output ids (bounded by the definition's node limit). Anything larger goes to the bucket.
 */
export const INLINE_VALUES_MAX_BYTES = 128 * 1024;

/**
 * The record's fields that can grow with what callers, owners and upstreams send: input values
 * (up to the request body limit, PIPEGATE_MAX_BODY_BYTES, at most 10 MB), outputs (an http
 * node's answer alone may be 1 MiB), error messages (a transform's `$error()` may carry any
 * value), the trace (held to TRACE_MAX_BYTES), the callback URL (no limit of its own beyond the
 * body's) and the visible output ids (up to PIPEGATE_MAX_NODES of 64 characters). Everything
 * else in it is bounded: keys, ids, times, asset references (one per input, at most 32), the
 * delivery log (the last 20 attempts, each error a host name and a code).
 */
export const CLAIM_FIELDS = ['inputs', 'outputs', 'error_message', 'caller_error_message', 'trace', 'callback', 'visible_outputs'] as const;
export type ClaimField = (typeof CLAIM_FIELDS)[number];

/** A write's values as stored in the item (the trace already packed into its string). */
export type ClaimValues = Partial<Record<ClaimField, unknown>>;

/** The reference a record keeps to one stored object: its name under the execution's prefix, its size, and the fields it holds. */
export interface ValueClaim {
  name: string;
  bytes: number;
  fields: ClaimField[];
}

/** What one write does: the values that stay in the item, and the object (if any) that holds the rest. */
export interface ClaimPlan {
  inline: ClaimValues;
  claim: { ref: ValueClaim; body: Uint8Array; values: ClaimValues } | null;
}

/**
 * How many bytes a value takes in a DynamoDB item, by DynamoDB's published rules, erring high:
 * strings in UTF-8, every number as the largest a number can take (21 bytes), a list or map 3
 * bytes plus 1 per element plus its attribute names and values. Unknown shapes count as their
 * JSON text.
 */
export function attributeBytes(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return 21;
  if (Array.isArray(value)) return value.reduce((n: number, v: unknown) => n + 1 + attributeBytes(v), 3);
  if (typeof value === 'object') {
    return Object.entries(value).reduce((n, [k, v]) => n + 1 + Buffer.byteLength(k, 'utf8') + attributeBytes(v), 3);
  }
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** A field as it counts in the item: its name and its value. */
const fieldBytes = (field: string, value: unknown): number => Buffer.byteLength(field, 'utf8') + attributeBytes(value);

/** The object's name: its text's hash, so a retried write of the same values names the same object. */
export const claimName = (body: Uint8Array): string => `values.${createHash('sha256').update(body).digest('hex').slice(0, 32)}.json`;

/** Whether `body` is the object `name` was made for (names carry their text's hash). */
export const claimMatches = (name: string, body: Uint8Array): boolean => claimName(body) === name;

/**
 * Decides what one write keeps in the item. Nothing moves while the values fit `maxInline`;
 * otherwise the largest fields move, one after another, until what stays fits, and all that
 * moves goes into one object. Fields whose value is null or absent never move.
 */
export function planClaim(values: ClaimValues, maxInline = INLINE_VALUES_MAX_BYTES): ClaimPlan {
  const present = CLAIM_FIELDS.filter((f) => values[f] !== undefined && values[f] !== null);
  const sizes = new Map(present.map((f) => [f, fieldBytes(f, values[f])]));
  let total = [...sizes.values()].reduce((a, b) => a + b, 0);
  if (total <= maxInline) return { inline: { ...values }, claim: null };
  const inline: ClaimValues = { ...values };
  const moved: ClaimValues = {};
  const fields: ClaimField[] = [];
  for (const f of [...present].sort((a, b) => (sizes.get(b) ?? 0) - (sizes.get(a) ?? 0))) {
    if (total <= maxInline) break;
    moved[f] = values[f];
    // Null keeps the attribute present (a condition such as attribute_not_exists(trace) still holds its meaning).
    inline[f] = null;
    fields.push(f);
    total -= (sizes.get(f) ?? 0) - fieldBytes(f, null);
  }
  const body = new TextEncoder().encode(JSON.stringify(moved));
  return { inline, claim: { ref: { name: claimName(body), bytes: body.length, fields }, body, values: moved } };
}

/** The values an object holds, or null when its text is not what its reference names (never throws). */
export function readClaim(ref: ValueClaim, body: Uint8Array): ClaimValues | null {
  if (body.length !== ref.bytes || !claimMatches(ref.name, body)) return null;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body)) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
    const out: ClaimValues = {};
    for (const f of ref.fields) if (f in parsed) out[f] = (parsed as Record<string, unknown>)[f];
    return out;
  } catch {
    return null;
  }
}

/** The references a stored record keeps, from its `claims` attribute (anything malformed is left out). */
export function claimsOf(stored: unknown): ValueClaim[] {
  if (!Array.isArray(stored)) return [];
  return stored.filter(
    (c): c is ValueClaim =>
      typeof c === 'object' &&
      c !== null &&
      typeof (c as ValueClaim).name === 'string' &&
      typeof (c as ValueClaim).bytes === 'number' &&
      Array.isArray((c as ValueClaim).fields) &&
      (c as ValueClaim).fields.every((f) => (CLAIM_FIELDS as readonly string[]).includes(f)),
  );
}

/**
 * What a field reads as when its object is gone (a run's values outlive its objects: runs keep
 * their records, the bucket's objects expire after objectExpiryDays; a deleted deployment's
 * objects go with it). Never null where a view expects a map, and an error stays an error.
 */
export function goneValue(field: ClaimField): unknown {
  switch (field) {
    case 'inputs':
    case 'outputs':
      return {};
    case 'error_message':
    case 'caller_error_message':
      return 'The error message was too large for the record and its stored copy has expired';
    case 'trace':
    case 'callback':
      return null;
    case 'visible_outputs':
      // None visible: a caller never sees an output the owner hid.
      return [];
  }
}

/** The object's key needs these of the record (functions/core/object-keys.ts executionPrefix). */
export type ClaimOwner = Pick<Execution, 'kind' | 'deployment_id' | 'pipeline_id' | 'execution_id'>;
