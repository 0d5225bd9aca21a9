/**
 * The one definition of what an input value may be: the types an input node declares, what a
 * value of each type looks like, and how a mismatch is said. Push validation, execution
 * requests, owner runs and the CLI all ask here.
 */
import { checkUrl, type UrlCheckOptions } from './address-guard';
import { DEFINITION_ASSET_MAX_BYTES, parseAssetValue } from './assets';
import type { InputValueType, RawValue } from './types';

export const INPUT_VALUE_TYPES = ['string', 'integer', 'float', 'boolean', 'reference', 'asset'] as const satisfies readonly InputValueType[];

/** What a caller puts in `value_type` beside a value: REFERENCE for reference inputs, ASSET for asset inputs, RAW for the rest. */
export type RequestValueType = 'RAW' | 'REFERENCE' | 'ASSET';
export const requestValueType = (type: InputValueType): RequestValueType =>
  type === 'reference' ? 'REFERENCE' : type === 'asset' ? 'ASSET' : 'RAW';

/** A base64 data URI of at most DEFINITION_ASSET_MAX_BYTES: an asset input's current value in a definition. */
export function isDefinitionAssetValue(x: unknown): x is string {
  if (typeof x !== 'string' || !x.startsWith('data:')) return false;
  const parsed = parseAssetValue(x);
  return parsed.ok && parsed.form.kind === 'inline' && parsed.form.bytes.length <= DEFINITION_ASSET_MAX_BYTES;
}

/** An absolute http or https URL naming a host (the form a reference must have, wherever it is checked). */
export function isAbsoluteHttpUrl(x: unknown): x is string {
  if (typeof x !== 'string') return false;
  try {
    const u = new URL(x);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * A reference given with a request (a caller's execution or an owner's run): its form, then the
 * address guard, so a caller cannot hand a pipeline a URL into the service's own network. Null
 * when it passes; the reason never repeats the URL's path or query.
 */
export function referenceProblem(value: unknown, opts: UrlCheckOptions): string | null {
  if (!isAbsoluteHttpUrl(value)) return `must be ${EXPECTED.reference}`;
  const refused = checkUrl(value, opts);
  return refused === null ? null : `is not an allowed URL: ${refused}`;
}

export const isPlainObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

export const isInputValueType = (x: unknown): x is InputValueType =>
  typeof x === 'string' && (INPUT_VALUE_TYPES as readonly string[]).includes(x);

/** A RAW value: a string, a finite number or a boolean. */
export const isRawValue = (x: unknown): x is RawValue =>
  typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x));

const EXPECTED: Record<InputValueType, string> = {
  string: 'a string',
  integer: 'a whole number',
  float: 'a finite number',
  boolean: 'true or false',
  reference: 'an absolute http or https URL',
  asset: `a base64 data URI (data:<media type>;base64,...) of at most ${DEFINITION_ASSET_MAX_BYTES} bytes decoded`,
};

/** Whether `value` is a value of `type`. Integers are safe integers: larger ones lose digits in JSON. */
export function matchesValueType(type: InputValueType, value: unknown): value is RawValue {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value);
    case 'float':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'reference':
      return isAbsoluteHttpUrl(value);
    case 'asset':
      return isDefinitionAssetValue(value);
  }
}

/** What a value of `type` is, for messages: "a whole number". */
export const expectedValue = (type: InputValueType): string => EXPECTED[type];

/** null when `value` fits `type`, else "must be a whole number (its type is integer)". */
export function valueTypeProblem(type: InputValueType, value: unknown): string | null {
  return matchesValueType(type, value) ? null : `must be ${EXPECTED[type]} (its type is ${type})`;
}
