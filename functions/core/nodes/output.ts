/**
 * The output node: a response key; its value is a RAW value, an asset of this run, or a list of
 * assets of this run (a map of renders). Its `from` may list several nodes (branches): its value
 * is the first one's that ran; when none ran the output is absent.
 */
import * as v from 'valibot';
import type { ObjectRef } from '../ports';
import { isRawValue } from '../values';
import { defineNode, description, FLOW_FIELDS, label, nodeRef, objectMessage, type NodeReference } from './kind';
import { AssetOutput, type RunContext } from './run-context';

function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (typeof x === 'number') return 'a number that is not finite';
  return typeof x;
}

const from = v.union(
  [
    nodeRef,
    v.pipe(
      v.array(nodeRef, 'must be a node id or a list of node ids'),
      v.minLength(1, 'must list at least one node id'),
      v.description('Branches: the value of the first one listed that ran (the others were skipped).'),
    ),
  ],
  'must be a node id or a list of node ids',
);

/** The ids `from` names, as a list. */
const fromList = (f: string | readonly string[]): readonly string[] => (typeof f === 'string' ? [f] : f);

/**
 * A list every entry of which is an asset of this run (or null: a map's item that failed under
 * `on_item_error: "skip"`): an ASSET output whose value is the list of their links, in order.
 */
function assetList(value: readonly unknown[], ctx: RunContext): (ObjectRef | null)[] | null {
  const refs: (ObjectRef | null)[] = [];
  for (const entry of value) {
    if (entry === null) {
      refs.push(null);
      continue;
    }
    const held = ctx.held(entry);
    if (held === null) return null;
    refs.push(held.ref);
  }
  return refs;
}

export const output = defineNode({
  object: v.strictObject({ type: v.literal('output'), from, if: FLOW_FIELDS.if, label, description }, objectMessage('an object')),
  description:
    "An output: the response key. Its value must be a string, a finite number, a boolean, an asset of this run (an asset input or an http node's binary answer, passed on), or a list of assets of this run (a map's files). `from` may list branches: the first one that ran gives the value; when none ran the output is absent.",
  code: 'o',
  role: 'output',
  feeds: false,
  references: (raw): NodeReference[] => {
    if (typeof raw.from === 'string') return [{ at: ['from'], target: raw.from }];
    if (!Array.isArray(raw.from)) return [];
    return raw.from.flatMap((target: unknown, i) => (typeof target === 'string' ? [{ at: ['from', i], target }] : []));
  },
  dependencies: (node) => fromList(node.from),
  joinsAny: (node) => typeof node.from !== 'string',
  example: { type: 'output', from: ['a', 'b'], if: "a != ''" },
  durability: 'pure',
  repeatable: () => true,
  waits: () => false,
  longestMs: () => 0,
  expressions: ['if'],
  secrets: { templates: [], bindings: [] },
  async run(node, values, ctx) {
    // The nodes it reads that were skipped come as undefined: the first that ran gives the value.
    const value = values.find((x) => x !== undefined);
    if (value === undefined) throw new Error(`'${fromList(node.from).join("', '")}' produced no value`);
    if (isRawValue(value)) return { value };
    const held = ctx.held(value);
    if (held !== null) return { value: new AssetOutput(held.ref) };
    if (Array.isArray(value)) {
      const refs = assetList(value, ctx);
      if (refs !== null) return { value: new AssetOutput(refs) };
    }
    const list = Array.isArray(value)
      ? " (a list reaches an output when each entry is an asset of this run or null; a list of values reaches it as text, through a transform such as $join(list, ', ') or $string(list))"
      : '';
    throw new Error(`output must be a string, a finite number, a boolean or an asset of this run, got ${describeType(value)}${list}`);
  },
  callerReason: () => 'it produced no usable value',
});
