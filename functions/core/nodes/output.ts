/** The output node: a response key; its value is a RAW value or an asset of this run. */
import * as v from 'valibot';
import { isRawValue } from '../values';
import { defineNode, description, label, nodeRef, objectMessage } from './kind';
import { AssetOutput } from './run-context';

function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (typeof x === 'number') return 'a number that is not finite';
  return typeof x;
}

export const output = defineNode({
  object: v.strictObject({ type: v.literal('output'), from: nodeRef, label, description }, objectMessage('an object')),
  description:
    "An output: the response key. Its value must be a string, a finite number, a boolean, or an asset of this run (an asset input or an http node's binary answer, passed on).",
  code: 'o',
  role: 'output',
  feeds: false,
  references: (raw) => (typeof raw.from === 'string' ? [{ at: ['from'], target: raw.from }] : []),
  dependencies: (node) => [node.from],
  example: { type: 'output', from: 'a' },
  durability: 'pure',
  repeatable: () => true,
  waits: () => false,
  longestMs: () => 0,
  expressions: [],
  secrets: { templates: [], bindings: [] },
  async run(node, [value], ctx) {
    if (value === undefined) throw new Error(`'${node.from}' produced no value`);
    if (isRawValue(value)) return { value };
    const held = ctx.held(value);
    if (held !== null) return { value: new AssetOutput(held.ref) };
    throw new Error(`output must be a string, a finite number, a boolean or an asset of this run, got ${describeType(value)}`);
  },
  callerReason: () => 'it produced no usable value',
});
