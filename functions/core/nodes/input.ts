/** The input node: a request key; its value is the caller's, else the published one. */
import * as v from 'valibot';
import { isMediaTypePattern, MAX_MEDIA_TYPES, UPLOAD_MAX_BYTES } from '../assets';
import { InputValueType, RawValue } from '../schema-parts';
import { expectedValue, isInputValueType, isRawValue, matchesValueType } from '../values';
import { defineNode, describeType, description, integerIn, label, objectMessage, type FieldProblem } from './kind';

export const SVG_MEDIA_TYPE = 'image/svg+xml';
/**
 * Why an input cannot list SVG. Media types are sniffed from the bytes, and an SVG file is XML
 * text that no sniffer can tell from other XML (file-type calls it application/xml), so an
 * input listing it would refuse every SVG anyone sends; and an SVG is a document that can run
 * script, which the asset route would have to serve as an attachment anyway.
 */
export const SVG_REFUSAL =
  'cannot be image/svg+xml: files are recognised by their bytes, and an SVG is XML text that cannot be told apart from other XML, so no SVG would ever pass (an SVG can also carry script); take drawings as PNG (image/png) instead';

/** What an asset input accepts: sniffed media types and a largest size. Contracts show them too. */
export const ASSET_RESTRICTIONS = {
  media_types: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          v.string('must be a media type (a string)'),
          v.check(isMediaTypePattern, 'must be a lowercase media type such as image/png, or a whole type such as image/*'),
          v.check((t: string) => t !== SVG_MEDIA_TYPE, SVG_REFUSAL),
        ),
        'must be a list of media types',
      ),
      v.minLength(1, 'must list at least one media type (leave it out to accept any)'),
      v.maxLength(MAX_MEDIA_TYPES, `must list at most ${MAX_MEDIA_TYPES} media types`),
      v.check((l: string[]) => new Set(l).size === l.length, 'must not list a media type twice'),
      v.description(
        'Asset inputs: the media types accepted (`image/png`, or a whole type such as `image/*`), sniffed from the bytes; absent: any.',
      ),
    ),
  ),
  max_bytes: v.optional(
    v.pipe(
      integerIn(1, UPLOAD_MAX_BYTES, ' bytes'),
      v.description('Asset inputs: the largest file accepted; absent: up to the inline and upload limits.'),
    ),
  ),
};

function describeValue(x: unknown): string {
  if (typeof x === 'string') return `the string ${JSON.stringify(x.length > 40 ? `${x.slice(0, 40)}…` : x)}`;
  if (typeof x === 'number' || typeof x === 'boolean') return String(x);
  return describeType(x);
}

export const input = defineNode({
  object: v.strictObject(
    { type: v.literal('input'), value_type: InputValueType, value: RawValue, ...ASSET_RESTRICTIONS, label, description },
    objectMessage('an object'),
  ),
  description: 'An input: the request key. `value` must match `value_type`.',
  code: 'i',
  role: 'input',
  feeds: true,
  references: () => [],
  dependencies: () => [],
  example: { type: 'input', value_type: 'string', value: 'world' },
  durability: 'pure',
  repeatable: () => true,
  waits: () => false,
  longestMs: () => 0,
  expressions: [],
  secrets: { templates: [], bindings: [] },
  checks(raw) {
    const problems: FieldProblem[] = [];
    const valueType = raw.value_type;
    if (!isInputValueType(valueType)) return problems;
    const value = raw.value;
    // A value that is no RAW value at all is the schema's to report.
    if (Object.hasOwn(raw, 'value') && isRawValue(value) && !matchesValueType(valueType, value)) {
      problems.push({
        at: ['value'],
        reason: `must be ${expectedValue(valueType)} because value_type is ${valueType}; got ${describeValue(value)}`,
      });
    }
    if (valueType !== 'asset') {
      for (const field of ['media_types', 'max_bytes']) {
        if (Object.hasOwn(raw, field)) problems.push({ at: [field], reason: 'applies only to asset inputs (value_type asset)' });
      }
    }
    return problems;
  },
  async run(node, _values, ctx, id) {
    if (node.value_type === 'asset') {
      const view = ctx.assets !== undefined && Object.hasOwn(ctx.assets, id) ? ctx.assets[id] : undefined;
      if (view === undefined) throw new Error('the file of this asset input was not stored');
      const ref = ctx.assetRefs !== undefined && Object.hasOwn(ctx.assetRefs, id) ? ctx.assetRefs[id] : undefined;
      if (ref !== undefined) ctx.hold({ ref, view: { ...view } });
      return { value: { ...view } };
    }
    return { value: Object.hasOwn(ctx.inputValues, id) ? ctx.inputValues[id] : node.value };
  },
  callerReason: () => 'it failed',
});
