/**
 * The pipeline definition's shape, declared once (schemas only: no JSONata, so that shapes.ts,
 * which documents it, and every function that loads shapes.ts stay free of the evaluator).
 * Each node type's schema is its kind's (functions/core/nodes/); this file holds the definition
 * around them. pipeline.ts checks definitions with these schemas; types.ts infers the
 * definition's types from them.
 */
import * as v from 'valibot';
import { MAX_MEDIA_TYPES } from './assets';
import { NODE_ID_PATTERN, RESERVED_NODE_IDS } from './ids';
import { Node } from './nodes';
import { description, describeType } from './nodes/kind';
import { ownRecord } from './schema-parts';

export { MAX_MEDIA_TYPES, Node, describeType };
export { MAX_DESCRIPTION_LENGTH, MAX_LABEL_LENGTH } from './nodes/kind';
export { ASSET_RESTRICTIONS, SVG_MEDIA_TYPE, SVG_REFUSAL } from './nodes/input';
export { DEFAULT_HTTP_TIMEOUT_MS, HTTP_METHODS, HTTP_TIMEOUT_MAX_MS } from './nodes/http';
export { DELAY_MAX_MS } from './nodes/delay';
export const DEFAULT_MAX_NODES = 64;
/** The longest an execution may be given (a definition's `timeout_ms`): 7 days, a wait node's longest wait. */
export const MAX_EXECUTION_TIMEOUT_MS = 604_800_000;

/*
 * validateDefinition (pipeline.ts) checks every field with these schemas, and shapes.ts
 * documents them (PipelineDefinition, Node, InputNode, ...), so what is documented is what is
 * checked. Its walk adds what a schema cannot say: every unknown field listed at once (a strict
 * object reports the first), references, cycles, the rules between fields, and the
 * deployment's own node limit. Messages are what an owner reads.
 */

/** A node id as a key of `nodes`. */
export const NodeKey = v.pipe(
  v.string(),
  v.check(
    (id: string) => !RESERVED_NODE_IDS.includes(id),
    (issue) => `'${String(issue.input)}' is a reserved name and cannot be a node id`,
  ),
  v.regex(
    NODE_ID_PATTERN,
    'invalid node id: it must start with a letter or an underscore, hold only letters, digits and underscores, and be at most 64 characters long',
  ),
);

export const DEFINITION_ENTRIES = {
  description,
  retry_interrupted: v.optional(
    v.pipe(
      v.boolean((issue) => `must be true or false, got ${describeType(issue.input)}`),
      v.description(
        "Local runtime: an execution interrupted by a crash (kill -9, power loss) runs again from the start at the next start, up to the state machine's retries (default true); false fails it instead, for http nodes that are not safe to repeat.",
      ),
    ),
  ),
  timeout_ms: v.optional(
    v.pipe(
      v.number('must be a number'),
      v.integer('must be a whole number'),
      v.minValue(1_000, 'must be at least 1000 ms'),
      v.maxValue(MAX_EXECUTION_TIMEOUT_MS, `must be at most ${MAX_EXECUTION_TIMEOUT_MS} ms (7 days)`),
      v.description(
        "The longest an execution may take, from its start to its end, waits included (default: the service's configured time-out, 300 s unless set, and at most 170 s for a pipeline that runs on Express). A pipeline runs on the Standard state machine when this is more than 170 s, or, without it, when its nodes one after another could take longer (a job's or a wait's time-out, a long delay); otherwise on Express. Decided when the version is pushed.",
      ),
    ),
  ),
  // Checked node by node by the walk, which lists every node's problems and then those
  // between nodes; the limit stated is the default (PIPEGATE_MAX_NODES may lower or raise it).
  nodes: v.pipe(
    ownRecord(NodeKey, Node),
    v.minEntries(1, 'must hold at least one node'),
    v.maxEntries(DEFAULT_MAX_NODES),
    // Valibot has no keyword for "not one of these" on a key.
    v.metadata({ propertyNames: { pattern: NODE_ID_PATTERN.source, not: { enum: [...RESERVED_NODE_IDS] } } }),
  ),
};

export const PipelineDefinitionSchema = v.pipe(
  v.strictObject(DEFINITION_ENTRIES),
  v.description(
    'Checked whole on push: unknown types or fields, bad ids, missing references, cycles, type mismatches and JSONata syntax errors are all listed.',
  ),
);

export const TOP_LEVEL_FIELDS = Object.keys(DEFINITION_ENTRIES) as (keyof typeof DEFINITION_ENTRIES)[];
