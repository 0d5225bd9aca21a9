/** The transform node: a JSONata expression over the values of its inputs. */
import * as v from 'valibot';
import { defineNode, description, expression, FLOW_FIELDS, listReferences, nodeRefs, objectMessage } from './kind';
import { scope } from './run-context';

export const transform = defineNode({
  object: v.strictObject(
    {
      type: v.literal('transform'),
      inputs: nodeRefs,
      expression: expression('JSONata, evaluated over `{ <input id>: value }`.'),
      ...FLOW_FIELDS,
      description,
    },
    objectMessage('an object'),
  ),
  code: 't',
  role: null,
  feeds: true,
  references: (raw) => listReferences(raw),
  dependencies: (node) => node.inputs,
  example: { type: 'transform', inputs: ['a', 'b'], expression: "a & ', ' & b", if: "a != ''" },
  durability: 'pure',
  repeatable: () => true,
  waits: () => false,
  longestMs: () => 0,
  expressions: ['expression', 'if'],
  secrets: { templates: [], bindings: [] },
  run: async (node, values, ctx) => ({ value: await ctx.evaluate(node.expression, scope(node.inputs, values)) }),
  callerReason: () => 'its expression failed',
});
