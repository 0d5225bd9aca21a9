/** The delay node: its one input's value, after waiting. */
import * as v from 'valibot';
import { defineNode, description, integerIn, listReferences, nodeRef, objectMessage } from './kind';

export const DELAY_MAX_MS = 60_000;

export const delay = defineNode({
  object: v.strictObject(
    {
      type: v.literal('delay'),
      inputs: v.pipe(v.array(nodeRef, 'must list exactly one node id'), v.length(1, 'must list exactly one node id')),
      ms: integerIn(0, DELAY_MAX_MS, ' ms'),
      description,
    },
    objectMessage('an object'),
  ),
  code: 'd',
  role: null,
  feeds: true,
  // A list of another length is the schema's to report; its ids are not references then.
  references: (raw) => (Array.isArray(raw.inputs) && raw.inputs.length === 1 ? listReferences(raw) : []),
  dependencies: (node) => node.inputs,
  example: { type: 'delay', inputs: ['a'], ms: 1000 },
  expressions: [],
  secrets: { templates: [], bindings: [] },
  async run(node, [value], ctx) {
    await ctx.sleep(node.ms);
    return value;
  },
  callerReason: () => 'it failed',
});
