/**
 * The delay node: its one input's value, after waiting. A delay of more than a second is a
 * wait of the state machine (no Lambda runs meanwhile); a shorter one is made inside the step.
 */
import * as v from 'valibot';
import { defineNode, description, FLOW_FIELDS, integerIn, listReferences, nodeRef, objectMessage, Waiting } from './kind';
import { IN_STEP_WAIT_MAX_MS } from './run-context';

/** 24 hours. */
export const DELAY_MAX_MS = 86_400_000;

export const delay = defineNode({
  object: v.strictObject(
    {
      type: v.literal('delay'),
      inputs: v.pipe(v.array(nodeRef, 'must list exactly one node id'), v.length(1, 'must list exactly one node id')),
      ms: v.pipe(
        integerIn(0, DELAY_MAX_MS, ' ms'),
        v.description('Up to 24 hours. Longer than a second, the execution waits in the state machine, with nothing running.'),
      ),
      ...FLOW_FIELDS,
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
  example: { type: 'delay', inputs: ['a'], ms: 1000, if: "a != ''" },
  expressions: ['if'],
  secrets: { templates: [], bindings: [] },
  durability: 'recorded',
  repeatable: () => true,
  waits: (node) => node.ms > IN_STEP_WAIT_MAX_MS,
  longestMs: (node) => node.ms,
  async run(node, [value], ctx) {
    if (node.ms > IN_STEP_WAIT_MAX_MS) {
      const until = ctx.now() + node.ms;
      return new Waiting(until, { until });
    }
    await ctx.sleep(node.ms);
    return { value };
  },
  async resume(_node, [value], ctx, _id, memo) {
    const until = typeof memo.until === 'number' ? memo.until : 0;
    if (ctx.now() < until) return new Waiting(until, { until });
    return { value };
  },
  callerReason: () => 'it failed',
});
