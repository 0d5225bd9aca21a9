/**
 * What every node type declares, once, in its own file (functions/core/nodes/<type>.ts): its
 * schema (the fields, their messages and descriptions), the nodes it reads, the rules between
 * its fields, where it may name owner secrets, its part in the contract, its one-letter code in
 * stored traces and progress, how it runs, and what a caller may read of its failure. The
 * registry (./index.ts) holds them all; every table, walk, codec and dispatch is derived from
 * it, so a new node type is one new file and one line there, and a missing piece is a compile
 * error.
 *
 * Kinds import no JSONata, no address guard and no storage: what a run needs of those comes
 * through its context (./run-context.ts), and push-time expression checks are made by
 * pipeline.ts from `expressions`. So the functions that only document or read definitions
 * (shapes.ts) stay free of the evaluator.
 */
import { valueAt } from '../field-paths';
import * as v from 'valibot';
import { NODE_ID_PATTERN } from '../ids';
import type { ResumeUrlFields } from '../resume-refs';
import type { RunContext } from './run-context';

/** A wait node's event: the object posted to its resume URL, and when. */
export interface Resumed {
  value: unknown;
  at: number;
}

/** A path inside a node: field names and list positions. */
export type FieldPath = readonly (string | number)[];

/** A node reading another: where it names it, and the id it names. */
export interface NodeReference {
  at: FieldPath;
  target: string;
}

/** A problem with one node's fields that its schema cannot say. */
export interface FieldProblem {
  at: FieldPath;
  reason: string;
}

/**
 * A node's part in a deployment's contract: `input` nodes are request keys, `output` nodes
 * response keys, `wait` nodes the events a caller may send while the execution waits (their
 * resume URLs); other nodes are the pipeline's inner work.
 */
export type ContractRole = 'input' | 'output' | 'wait' | null;

/** Where a node type's fields may name owner secrets (functions/core/owner-secrets.ts says how). */
export interface SecretFields {
  /** Fields (a string, or an object of strings such as headers) where `{{secrets.NAME}}` is substituted. */
  templates: readonly string[];
  /** JSONata fields (among `expressions`, dotted paths) where `$secrets.NAME` is bound. */
  bindings: readonly string[];
}

/**
 * A node that is not finished at the end of a step: what it keeps until its next step (`memo`,
 * JSON only, stored with the execution) and when that step is due (`until`, epoch ms; null:
 * only an event or the node's own time-out wakes it). The state machine waits, no Lambda runs.
 */
export class Waiting {
  constructor(
    readonly until: number | null,
    readonly memo: Readonly<Record<string, unknown>>,
    /** What views say of it meanwhile: polls made so far, the upstream's status. */
    readonly detail: { polls?: number; status?: string } = {},
  ) {}
}

/**
 * What one step of a node came to: its value, or a wait. A map's value may come with the items
 * that failed under `on_item_error: "skip"` (their places hold null), for the owner's trace.
 */
export type Outcome = { value: unknown; itemErrors?: ItemError[] } | Waiting;

/** An item of a map that failed while its map went on (`on_item_error: "skip"`): which, and why. */
export interface ItemError {
  index: number;
  error: string;
}

/**
 * How a node's value is kept across steps. `pure` nodes call nothing: their values are
 * recorded with the step that computed them and computed again if it was cut short.
 * `recorded` nodes (calls, waits) are recorded the moment they finish, and never run again.
 */
export type Durability = 'pure' | 'recorded';

/** The strict object schema of a node type: its `type` literal and its fields. */
export type NodeObjectSchema = v.StrictObjectSchema<
  { readonly type: v.LiteralSchema<string, undefined> } & v.ObjectEntries,
  v.ErrorMessage<v.StrictObjectIssue> | undefined
>;

/** A node of the type `O` declares, as validated. */
export type NodeOf<O extends NodeObjectSchema> = v.InferOutput<O>;

export interface NodeKindSpec<O extends NodeObjectSchema> {
  /** The node's fields: what a push checks and both documents show. */
  object: O;
  /** What the documents say of the node type. */
  description?: string;
  /**
   * One letter naming the type in stored traces and progress (functions/core/trace-codec.ts,
   * progress.ts). Stored records keep it: never reuse or change a letter.
   */
  code: string;
  role: ContractRole;
  /** Whether other nodes may read its value (an output's value goes to the caller only). */
  feeds: boolean;
  /** The nodes it reads, from its raw fields (strings only; a push checks the rest). */
  references(raw: Readonly<Record<string, unknown>>): NodeReference[];
  /** The ids it reads, in the order its run receives their values. */
  dependencies(node: NodeOf<O>): readonly string[];
  /**
   * Whether it runs when at least one of the nodes it reads ran, those skipped being absent
   * (an output's list of `from`); default: its `join` field ("any"), else every one must have run.
   */
  joinsAny?(node: NodeOf<O>): boolean;
  /** Fields holding JSONata, as dotted paths (`body`, `poll.url`): checked for syntax at push. */
  expressions: readonly string[];
  secrets: SecretFields;
  /**
   * Where its fields may name a wait node's resume URL (functions/core/resume-refs.ts):
   * `{{resume_url.ID}}` in templates, `$resume_url('ID')` in JSONata bindings. Absent: nowhere.
   */
  resumeUrls?: ResumeUrlFields;
  /**
   * A field holding a whole node of another kind (a map's `node`): its unknown fields are listed
   * by `checks`, each with its reason, rather than by the schema.
   */
  nested?: string;
  /** Rules between its fields, on the raw node (only fields of the right type are looked at). */
  checks?(raw: Readonly<Record<string, unknown>>): FieldProblem[];
  /**
   * A valid node of this type, reading only ids `a` and `b` (string inputs). The documents show
   * it, and the registry's tests (test/unit/core/node-registry.test.ts) check every kind's
   * references and expressions through it: a reference to a missing node, to itself, or an
   * expression with a syntax error must each be refused at push.
   */
  example: NodeOf<O>;
  durability: Durability;
  /**
   * Whether its first step may be made again when a crash cut it short in the middle (an http
   * call whose answer was never recorded). A node that is not is failed instead, naming it.
   */
  repeatable(node: NodeOf<O>): boolean;
  /**
   * Whether it may wait for the state machine (polls, long waits): its step ends and a Wait state
   * of the state machine holds the execution, nothing running. Whether that needs the Standard
   * state machine is `longestMs`'s to say (functions/core/workflow-type.ts).
   */
  waits(node: NodeOf<O>): boolean;
  /**
   * The longest a node may take in all, milliseconds (its own time-out, its delay, a poll's or a
   * wait's time-out): a pipeline whose nodes could take longer one after another than an Express
   * execution allows runs on the Standard state machine.
   */
  longestMs(node: NodeOf<O>): number;
  /** A node's first step, given its dependencies' values in `dependencies` order. */
  run(node: NodeOf<O>, values: readonly unknown[], ctx: RunContext, id: string): Promise<Outcome>;
  /**
   * A later step of a node that was waiting: due (`until` passed) or woken by an event (a
   * resume). Kinds that never wait leave it out.
   */
  resume?(
    node: NodeOf<O>,
    values: readonly unknown[],
    ctx: RunContext,
    id: string,
    memo: Readonly<Record<string, unknown>>,
    event: Resumed | undefined,
  ): Promise<Outcome>;
  /**
   * Why a node failed, as callers may read it: what kind of thing went wrong, never an
   * upstream's URL or answer, a header, an expression's text or a secret's name.
   */
  callerReason(e: unknown): string;
}

export interface NodeKind<O extends NodeObjectSchema = NodeObjectSchema> extends NodeKindSpec<O> {
  type: NodeOf<O>['type'];
  /** The schema the documents show: the object under its description. */
  schema: O | v.SchemaWithPipe<readonly [O, v.DescriptionAction<NodeOf<O>, string>]>;
}

export function defineNode<O extends NodeObjectSchema>(spec: NodeKindSpec<O>): NodeKind<O> {
  const type = spec.object.entries.type.literal as NodeOf<O>['type'];
  const schema = spec.description === undefined ? spec.object : v.pipe(spec.object, v.description(spec.description));
  return { ...spec, type, schema };
}

/* ------------------------------------------------------------------ schema parts every kind uses */

export const MAX_DESCRIPTION_LENGTH = 2000;
export const MAX_LABEL_LENGTH = 80;

/** A value's kind, for messages: "an array", "a string". */
export function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  return typeof x === 'object' ? 'an object' : `a ${typeof x}`;
}

/** Message for an object schema: the same hook reports a missing key and a non-object. */
export const objectMessage =
  (what: string) =>
  (issue: v.BaseIssue<unknown>): string =>
    issue.path && issue.path.length > 0 ? 'is required' : `must be ${what}`;

export const description = v.optional(
  v.pipe(v.string('must be a string'), v.maxLength(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters long`)),
);

/** What a person reads instead of an input's or output's id (the web form's field names). */
export const label = v.optional(
  v.pipe(
    v.string('must be a string'),
    v.check((s: string) => s.trim() !== '', 'must not be empty'),
    v.maxLength(MAX_LABEL_LENGTH, `must be at most ${MAX_LABEL_LENGTH} characters long`),
    v.check(
      (s: string) => ![...s].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127),
      'must be one line, without control characters',
    ),
    v.description(
      `Shown instead of the id where people read it (the web form's field and result names); one line, at most ${MAX_LABEL_LENGTH} characters. Without one the form shows the id as words (\`thumbnail_bytes\` → "Thumbnail bytes").`,
    ),
  ),
);

/**
 * A reference to another node. Any string is taken, so that an id no node has is reported as
 * "refers to node 'x', which does not exist"; every reference the walk accepts names a node,
 * so it matches the node id pattern, which the document states.
 */
export const nodeRef = v.pipe(v.string('must be a node id (a string)'), v.metadata({ pattern: NODE_ID_PATTERN.source }));
export const nodeRefs = v.array(nodeRef, 'must be a list of node ids');

export const integerIn = (min: number, max: number, unit = '') =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}${unit}`),
    v.maxValue(max, `must be at most ${max}${unit}`),
  );

/** An expression: JSONata, checked for syntax at push (list its field in the kind's `expressions`). */
export const expression = (text: string) =>
  v.pipe(v.string('must be a JSONata expression (a string)'), v.minLength(1, 'must not be empty'), v.description(text));

/** The JSONata of a node's `if`. */
export const IF_TEXT =
  'JSONata over the same object as the node\'s own expressions (its inputs by id; skipped ones absent): true runs the node, false skips it, and every node reading it is skipped too (unless it says `join: "any"`). Anything but true or false fails the node.';

/**
 * Control flow, on every node that reads others (an input has nothing to decide on): `if`
 * skips it, `join: "any"` runs it when at least one of the nodes it reads ran.
 */
export const FLOW_FIELDS = {
  if: v.optional(expression(IF_TEXT)),
  join: v.optional(
    v.pipe(
      v.picklist(['all', 'any'], 'must be "all" or "any"'),
      v.metadata({ default: 'all' }),
      v.description(
        '"all": the node is skipped when any node it reads was skipped. "any": it runs when at least one of them ran, the skipped ones absent from the object its expressions see; skipped only when all were.',
      ),
    ),
  ),
};

/** The flow fields' names: a kind that takes them lists `if` among its expressions. */
export const FLOW_FIELD_NAMES = ['if', 'join'] as const;

/** `inputs` as a list of node ids: each string of it is a reference. */
export function listReferences(raw: Readonly<Record<string, unknown>>, field = 'inputs'): NodeReference[] {
  const list = raw[field];
  if (!Array.isArray(list)) return [];
  return list.flatMap((target: unknown, i) => (typeof target === 'string' ? [{ at: [field, i], target }] : []));
}

/** The value at a dotted field path of a raw node (`poll.url`), if every step is an object. */
export const fieldAt = valueAt;

/** The reason of an error, as thrown. */
export function reasonOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'object' && e !== null && 'message' in e && typeof e.message === 'string') return e.message;
  return String(e);
}

/** A call a crash (or a time-out) cut short before its answer was recorded, and not safe to repeat. */
export class InterruptedCallError extends Error {
  override readonly name = 'InterruptedCallError';
  constructor() {
    super(
      'it was interrupted in the middle of its call (a crash or a time-out), and its request is not safe to repeat: set "retry_interrupted": true on the node to repeat it',
    );
  }
}
