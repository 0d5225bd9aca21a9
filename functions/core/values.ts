/**
 * The one definition of what an input value may be: the types an input node declares, what a
 * value of each type looks like, and how a mismatch is said. Push validation, execution
 * requests, owner runs and the CLI all ask here, and each deployment's OpenAPI document
 * converts the same schemas (openapi.ts), so the check and the document cannot differ.
 */
import * as v from 'valibot';
import { checkUrl, type UrlCheckOptions } from './address-guard';
import { DEFINITION_ASSET_MAX_BYTES, INLINE_ASSET_BODY_MAX_BYTES, parseAssetValue, UPLOAD_VALUE_PREFIX, UPLOADS_ROUTE } from './assets';
import type { InputValueType, RawValue } from './types';

export const INPUT_VALUE_TYPES = [
  'string',
  'integer',
  'float',
  'boolean',
  'reference',
  'asset',
] as const satisfies readonly InputValueType[];

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

/**
 * How a reference starts, as the documents write it (`pattern`). A RegExp's source escapes `/`,
 * so the schema below states the text as metadata and tests the same text in its check.
 */
const REFERENCE_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://';
const REFERENCE_START = new RegExp(REFERENCE_PATTERN);

/** What the pattern cannot say: the rest parses as a URL (WHATWG) that names a host. */
function namesHost(s: string): boolean {
  try {
    return new URL(s).hostname !== '';
  } catch {
    return false;
  }
}

/**
 * Each input value type's value as a request carries it, with what its document says. A
 * `check` has no JSON Schema keyword: its rule is said in the description. Two rules stay where
 * they are and are only named here: the address guard (referenceProblem, which needs the
 * request's options) and an asset's forms and restrictions (assets.ts and the execute parser,
 * which need the input's restrictions and answer a reason per form).
 */
export const VALUE_SCHEMAS = {
  string: v.string(),
  // Safe integers only: larger ones lose digits in JSON. The document says so as minimum and maximum.
  integer: v.pipe(v.number(), v.safeInteger()),
  float: v.pipe(v.number(), v.finite()),
  boolean: v.boolean(),
  reference: v.pipe(
    v.string(),
    v.url(),
    v.check((s: string) => REFERENCE_START.test(s) && namesHost(s)),
    v.metadata({ pattern: REFERENCE_PATTERN }),
    v.description(
      'An absolute http or https URL naming a host. The address guard also refuses credentials in it and loopback, private and cloud metadata addresses: a 422 says why.',
    ),
  ),
  asset: v.pipe(
    v.string(),
    v.description(
      `The file: base64, a base64 data URI (data:<media type>;base64,...), or the \`asset.value\` an upload answered (${UPLOAD_VALUE_PREFIX}<upload id>). Inline files make the request body at most ${INLINE_ASSET_BODY_MAX_BYTES} bytes; send larger ones with ${UPLOADS_ROUTE}. The media type is sniffed from the bytes. Which form it is, and the input's media types and size, are checked when the request is read: a 422 says what is wrong.`,
    ),
  ),
} satisfies Record<InputValueType, v.GenericSchema<unknown, RawValue>>;

/** An absolute http or https URL naming a host (the form a reference must have, wherever it is checked). */
export const isAbsoluteHttpUrl = (x: unknown): x is string => v.is(VALUE_SCHEMAS.reference, x);

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

export const isPlainObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

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

/**
 * Whether `value` is a value of `type`: its schema, and for an asset the one form a definition
 * keeps (a data URI of at most DEFINITION_ASSET_MAX_BYTES; a request may also give base64 or an
 * upload, which the execute parser reads).
 */
export function matchesValueType(type: InputValueType, value: unknown): value is RawValue {
  return v.is(VALUE_SCHEMAS[type], value) && (type !== 'asset' || isDefinitionAssetValue(value));
}

/** What a value of `type` is, for messages: "a whole number". */
export const expectedValue = (type: InputValueType): string => EXPECTED[type];

/** null when `value` fits `type`, else "must be a whole number (its type is integer)". */
export function valueTypeProblem(type: InputValueType, value: unknown): string | null {
  return matchesValueType(type, value) ? null : `must be ${EXPECTED[type]} (its type is ${type})`;
}
