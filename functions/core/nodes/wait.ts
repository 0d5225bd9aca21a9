/**
 * The wait node: the execution pauses until a JSON object is POSTed to the node's resume URL
 * (`POST {base}/v1/resume/{token}`, functions/core/resume-token.ts), and that object is its
 * value; or until its time-out, when it fails naming it, or takes `on_timeout.value` instead.
 * While it waits the state machine waits, with nothing running. Who learns the URL: the
 * pipeline (`$resume_url('id')` in an http node), callers when the owner publishes the node
 * visible (the default), and the owner always.
 */
import * as v from 'valibot';
import { matchesValueType, isPlainObject, expectedValue } from '../values';
import { ownRecord, plainObject } from '../schema-parts';
import {
  defineNode,
  FLOW_FIELDS,
  describeType,
  description,
  integerIn,
  label,
  listReferences,
  nodeRefs,
  objectMessage,
  Waiting,
  type NodeOf,
} from './kind';

/** The shortest and longest a wait may last: a second, seven days. */
export const WAIT_TIMEOUT_MIN_MS = 1_000;
export const WAIT_TIMEOUT_MAX_MS = 604_800_000;
/** The most a resume body may hold (UTF-8 bytes of its JSON text). */
export const RESUME_MAX_BYTES = 262_144;
/** The most fields a wait node may describe. */
export const WAIT_MAX_FIELDS = 16;

/** The value types a field of a resume body may have: the plain ones of inputs. */
export const WAIT_FIELD_TYPES = ['string', 'integer', 'float', 'boolean'] as const;
export type WaitFieldType = (typeof WAIT_FIELD_TYPES)[number];

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

const WaitField = v.strictObject(
  {
    value_type: v.pipe(
      v.picklist(WAIT_FIELD_TYPES, `must be one of ${WAIT_FIELD_TYPES.join(', ')}`),
      v.description('What the field holds: a string, a whole number, a number, or true/false.'),
    ),
    label,
    description,
  },
  objectMessage('an object'),
);

const WaitObject = v.strictObject(
  {
    type: v.literal('wait'),
    inputs: v.optional(v.pipe(nodeRefs, v.description('Nodes that must be done before the wait begins (their values are not used).'))),
    timeout_ms: v.pipe(
      integerIn(WAIT_TIMEOUT_MIN_MS, WAIT_TIMEOUT_MAX_MS, ' ms'),
      v.description(
        "How long the node waits for its event, from when it begins to wait: 1 s to 7 days. Then it fails naming the time-out, unless `on_timeout` gives its value. The execution's own `timeout_ms` still bounds the whole.",
      ),
    ),
    on_timeout: v.optional(
      v.pipe(
        v.strictObject(
          { value: v.pipe(v.unknown(), v.description("The node's value when no event came in time (any JSON value).")) },
          objectMessage('an object with a value'),
        ),
        v.description('When the wait times out, the node takes `value` as its value instead of failing.'),
      ),
    ),
    fields: v.optional(
      v.pipe(
        plainObject('must be an object of field names to fields'),
        ownRecord(
          v.pipe(
            v.string(),
            v.regex(
              FIELD_NAME,
              'a field name must start with a letter or an underscore and hold only letters, digits and underscores (at most 64)',
            ),
          ),
          WaitField,
          'must be an object of field names to fields',
        ),
        v.minEntries(1, 'must describe at least one field (leave it out to take any object)'),
        v.maxEntries(WAIT_MAX_FIELDS, `must describe at most ${WAIT_MAX_FIELDS} fields`),
        v.description(
          'The object the resume takes, field by field: each listed field is required, of its type, and no other field is taken. The web form shows one control per field. Absent: any JSON object.',
        ),
      ),
    ),
    ...FLOW_FIELDS,
    label,
    description,
  },
  objectMessage('an object'),
);

export type WaitNode = NodeOf<typeof WaitObject>;

/** The wait ran out without an event and has no `on_timeout`. */
export class WaitTimedOutError extends Error {
  override readonly name = 'WaitTimedOutError';
  constructor(timeoutMs: number) {
    super(`no event came to its resume URL within ${timeoutMs} ms (timeout_ms)`);
  }
}

/**
 * Why a resume body does not fit the node, each problem with where (a field's name, or `(body)`
 * for the body as a whole; none: it fits). It must be a JSON object; with `fields`, each one
 * present and of its type, and no other.
 */
export function resumeBodyProblems(node: Pick<WaitNode, 'fields'>, value: unknown): { path: string; reason: string }[] {
  if (!isPlainObject(value)) return [{ path: '(body)', reason: `the body must be a JSON object, got ${describeType(value)}` }];
  const fields = node.fields;
  if (fields === undefined) return [];
  const problems: { path: string; reason: string }[] = [];
  for (const [name, field] of Object.entries(fields)) {
    if (!Object.hasOwn(value, name)) problems.push({ path: name, reason: 'is required' });
    else if (!matchesValueType(field.value_type, value[name]))
      problems.push({ path: name, reason: `must be ${expectedValue(field.value_type)}, got ${describeType(value[name])}` });
  }
  for (const name of Object.keys(value))
    if (!Object.hasOwn(fields, name)) problems.push({ path: name, reason: 'is not a field of this wait' });
  return problems;
}

/** What a waiting node keeps: when it began, and when its wait runs out. */
const untilOf = (memo: Readonly<Record<string, unknown>>): number | undefined => (typeof memo.until === 'number' ? memo.until : undefined);

export const wait = defineNode({
  object: WaitObject,
  description:
    "A wait for an event: the execution pauses (nothing runs) until a JSON object is POSTed to the node's resume URL, `POST {base}/v1/resume/{token}`, and that object is the node's value. The pipeline learns the URL with `$resume_url('<id>')` in an http node (a job's webhook); callers learn it from the execution's `waiting` list when the owner publishes the node visible; the owner always.",
  code: 'w',
  role: 'wait',
  feeds: true,
  references: (raw) => listReferences(raw),
  dependencies: (node) => node.inputs ?? [],
  example: {
    type: 'wait',
    inputs: ['a', 'b'],
    timeout_ms: 86_400_000,
    on_timeout: { value: { approved: false } },
    fields: { approved: { value_type: 'boolean', label: 'Approve' } },
    if: "a != ''",
  },
  expressions: ['if'],
  secrets: { templates: [], bindings: [] },
  durability: 'recorded',
  // Waiting does nothing outside: beginning again after a crash is harmless.
  repeatable: () => true,
  waits: () => true,
  longestMs: (node) => node.timeout_ms,
  async run(node, _values, ctx) {
    // Never past the execution's own end: the URL's expiry is then the execution's.
    const until = Math.min(ctx.now() + node.timeout_ms, ctx.deadline);
    return new Waiting(until, { until });
  },
  async resume(node, _values, ctx, _id, memo, event) {
    if (event !== undefined) return { value: event.value };
    const until = untilOf(memo) ?? Math.min(ctx.now() + node.timeout_ms, ctx.deadline);
    if (ctx.now() < until) return new Waiting(until, { until });
    if (node.on_timeout !== undefined) return { value: node.on_timeout.value };
    throw new WaitTimedOutError(node.timeout_ms);
  },
  callerReason: (e) => (e instanceof WaitTimedOutError ? 'no event came before its time-out' : 'it failed'),
});
