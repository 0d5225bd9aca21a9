/**
 * `--input k=v` parsing. Values arrive as text; the pipeline (or the deployment's contract)
 * says what type each input has, so "42" becomes 42 for an integer input and stays "42" for a
 * string one. Anything that does not fit is a usage error naming the input.
 */
import type { InputValueType, RawValue } from '../../functions/core/types';
import { isAbsoluteHttpUrl, isInputValueType } from '../../functions/core/values';
import { UsageError } from './errors';

export type { InputValueType, RawValue };

const INTEGER = /^[+-]?\d+$/;
// Plain decimal notation with an optional exponent: no hex, no Infinity, no NaN, no blanks.
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** One value, read as the given type; throws UsageError saying what was expected. */
export function parseValue(id: string, type: InputValueType, text: string): RawValue {
  switch (type) {
    case 'string':
      return text;
    case 'integer': {
      const n = Number(text);
      if (!INTEGER.test(text.trim()) || !Number.isSafeInteger(n)) {
        throw new UsageError(`--input ${id}=${text}: ${id} is an integer input; give a whole number such as 42`);
      }
      return n;
    }
    case 'float': {
      const n = Number(text);
      if (!FLOAT.test(text.trim()) || !Number.isFinite(n)) {
        throw new UsageError(`--input ${id}=${text}: ${id} is a float input; give a number such as 1.5`);
      }
      return n;
    }
    case 'boolean': {
      const t = text.trim().toLowerCase();
      if (t === 'true') return true;
      if (t === 'false') return false;
      throw new UsageError(`--input ${id}=${text}: ${id} is a boolean input; give true or false`);
    }
    case 'reference':
      if (!isAbsoluteHttpUrl(text)) {
        throw new UsageError(
          `--input ${id}=${text}: ${id} is a reference input; give an absolute http(s) URL such as https://example.com/data.json`,
        );
      }
      return text;
    case 'asset':
      // base64, a data URI or an upload's value, checked by the service (its bytes decide the type).
      return text;
  }
}

/** Splits `k=v` assignments (the first `=` separates); refuses blanks and repeats. */
export function splitAssignments(pairs: readonly string[]): [string, string][] {
  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 0) throw new UsageError(`--input ${pair}: expected id=value, e.g. --input name=Ada`);
    const id = pair.slice(0, at).trim();
    if (id === '') throw new UsageError(`--input ${pair}: the input id before "=" is empty`);
    if (seen.has(id)) throw new UsageError(`--input ${id} is given more than once`);
    seen.add(id);
    out.push([id, pair.slice(at + 1)]);
  }
  return out;
}

/**
 * Reads every `--input` against the known inputs (id → type). An id that is not an input is a
 * usage error listing the ones that are.
 */
export function parseInputs(pairs: readonly string[], types: ReadonlyMap<string, InputValueType>): Record<string, RawValue> {
  const values: Record<string, RawValue> = {};
  for (const [id, text] of splitAssignments(pairs)) {
    const type = types.get(id);
    if (type === undefined) {
      const known = [...types.keys()];
      throw new UsageError(
        `--input ${id}: there is no input "${id}"`,
        known.length ? `inputs: ${known.map((k) => `${k} (${types.get(k) ?? ''})`).join(', ')}` : 'this pipeline takes no inputs',
      );
    }
    values[id] = parseValue(id, type, text);
  }
  return values;
}

/** The input nodes of a definition as id → type, in declaration order. */
export function inputTypesOf(definition: unknown): Map<string, InputValueType> {
  const types = new Map<string, InputValueType>();
  const nodes = typeof definition === 'object' && definition !== null ? (definition as { nodes?: unknown }).nodes : undefined;
  if (typeof nodes !== 'object' || nodes === null) return types;
  for (const [id, node] of Object.entries(nodes as Record<string, unknown>)) {
    if (typeof node !== 'object' || node === null) continue;
    const n = node as { type?: unknown; value_type?: unknown };
    if (n.type === 'input' && isInputValueType(n.value_type)) types.set(id, n.value_type);
  }
  return types;
}
