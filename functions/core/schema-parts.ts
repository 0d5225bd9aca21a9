/**
 * The valibot pieces that the edge parsers (execution-request.ts, pipeline.ts, contract.ts) and
 * shapes.ts share: each request shape is declared once, beside its parser, from these; shapes.ts
 * imports those declarations to document them. Small on purpose: the execute path loads it.
 */
import * as v from 'valibot';
import { INPUT_VALUE_TYPES, isPlainObject } from './values';

/** An object and not an array (valibot's object schemas take arrays as objects). */
export const plainObject = (message: string) => v.custom<Record<string, unknown>>(isPlainObject, message);

/** A strict object's message: a key it does not know, or one it misses. */
export const strictFields = (issue: v.BaseIssue<unknown>): string => (issue.expected === 'never' ? 'is not a known field' : 'is required');

const RAW_MESSAGE = 'must be a string, a finite number or a boolean';

/** An input's or output's value. JSON has no infinite numbers; `1e999` parses as one and is refused. */
export const RawValue = v.pipe(
  v.union([v.string(), v.pipe(v.number(), v.finite(RAW_MESSAGE)), v.boolean()], RAW_MESSAGE),
  v.description('A string, a finite number or a boolean.'),
);

export const InputValueType = v.pipe(
  v.picklist(INPUT_VALUE_TYPES, `must be one of ${INPUT_VALUE_TYPES.join(', ')}`),
  v.description(
    '`reference`: an absolute http(s) URL; callers send it with value_type REFERENCE and nodes receive it as a string. `asset`: a file; callers send it with value_type ASSET (base64, a data URI, or an upload).',
  ),
);

type RecordSchema<K extends v.GenericSchema<string, string>, V extends v.GenericSchema> = v.RecordSchema<K, V, string | undefined>;

/**
 * `v.record` that checks every own key. valibot's record silently skips `__proto__`,
 * `prototype` and `constructor` (to keep them off its output object), but these are keys a
 * request may hold: `constructor` is a valid node and input id, and the others must be refused
 * with a word rather than dropped. The output defines each key as an own property, so none of
 * them reaches a prototype. The schema stays a `record` for the JSON Schema converter.
 */
export function ownRecord<K extends v.GenericSchema<string, string>, V extends v.GenericSchema>(
  key: K,
  value: V,
  message?: string,
): RecordSchema<K, V> {
  const schema = v.record(key, value, message);
  const base = schema['~run'].bind(schema);
  const run = (dataset: v.UnknownDataset, config: v.Config<v.BaseIssue<unknown>>): ReturnType<typeof base> => {
    const input = dataset.value;
    // Only an object is walked here; anything else gets the record's own type issue.
    if (!isPlainObject(input)) return base(dataset, config);
    const out: Record<string, unknown> = {};
    const issues: v.BaseIssue<unknown>[] = [];
    let typed = true;
    for (const entryKey of Object.keys(input)) {
      const entryValue = input[entryKey];
      const at = (origin: 'key' | 'value') => ({ type: 'object' as const, origin, input, key: entryKey, value: entryValue });
      const keyDataset = key['~run']({ value: entryKey }, config);
      for (const issue of keyDataset.issues ?? []) issues.push({ ...issue, path: [at('key')] });
      const valueDataset = value['~run']({ value: entryValue }, config);
      for (const issue of valueDataset.issues ?? []) issues.push({ ...issue, path: [at('value'), ...(issue.path ?? [])] });
      if (!keyDataset.typed || !valueDataset.typed) typed = false;
      else
        Object.defineProperty(out, keyDataset.value, { value: valueDataset.value, enumerable: true, writable: true, configurable: true });
      if (issues.length > 0 && config.abortEarly) break;
    }
    // The dataset's declared types are valibot's; this one is exactly what its record would give.
    return (issues.length > 0 ? { typed, value: out, issues } : { typed: true, value: out }) as ReturnType<typeof base>;
  };
  // `~standard.validate` calls `~run` through the schema, so replacing it covers both.
  return Object.assign(schema, { '~run': run });
}
