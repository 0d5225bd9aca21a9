/**
 * The one definition of what an input value may be: the types an input node declares, what a
 * value of each type looks like, and how a mismatch is said. Push validation, execution
 * requests, owner runs and the CLI all ask here.
 */
import type { InputValueType, RawValue } from './types';

export const INPUT_VALUE_TYPES = ['string', 'integer', 'float', 'boolean'] as const satisfies readonly InputValueType[];

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
  }
}

/** What a value of `type` is, for messages: "a whole number". */
export const expectedValue = (type: InputValueType): string => EXPECTED[type];

/** null when `value` fits `type`, else "must be a whole number (its type is integer)". */
export function valueTypeProblem(type: InputValueType, value: unknown): string | null {
  return matchesValueType(type, value) ? null : `must be ${EXPECTED[type]} (its type is ${type})`;
}
