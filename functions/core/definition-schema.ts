/**
 * The pipeline definition's shape, declared once (schemas only: no JSONata, so that shapes.ts,
 * which documents it, and every function that loads shapes.ts stay free of the evaluator).
 * pipeline.ts checks definitions with these schemas; types.ts infers the definition's types
 * from them.
 */
import * as v from 'valibot';
import { isMediaTypePattern, MAX_MEDIA_TYPES, UPLOAD_MAX_BYTES } from './assets';
import { NODE_ID_PATTERN, RESERVED_NODE_IDS } from './ids';
import { withSecretPlaceholders } from './owner-secrets';
import { InputValueType, ownRecord, plainObject, RawValue } from './schema-parts';
import type { NodeType } from './types';
import { isAbsoluteHttpUrl } from './values';

export { MAX_MEDIA_TYPES };
export const DEFAULT_MAX_NODES = 64;
export const MAX_DESCRIPTION_LENGTH = 2000;
export const MAX_LABEL_LENGTH = 80;
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const HTTP_TIMEOUT_MAX_MS = 30_000;
export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;
export const DELAY_MAX_MS = 60_000;

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Names valibot's record() skips silently; refusing them beats dropping a header without a word.
const UNSUPPORTED_HEADER_NAMES = new Set(['__proto__', 'prototype', 'constructor']);

/** A value's kind, for messages: "an array", "a string". */
export function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  return typeof x === 'object' ? 'an object' : `a ${typeof x}`;
}

/*
 * validateDefinition (pipeline.ts) checks every field with these schemas, and shapes.ts
 * documents them (PipelineDefinition, Node, InputNode, ...), so what is documented is what is
 * checked. Its walk adds what a schema cannot say: every unknown field listed at once (a strict
 * object reports the first), references, cycles, the rules between fields, and the
 * deployment's own node limit. Messages are what an owner reads.
 */

/** Message for an object schema: the same hook reports a missing key and a non-object. */
const objectMessage =
  (what: string) =>
  (issue: v.BaseIssue<unknown>): string =>
    issue.path && issue.path.length > 0 ? 'is required' : `must be ${what}`;

/** What a person reads instead of an input's or output's id (the web form's field names). */
const label = v.optional(
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

const description = v.optional(
  v.pipe(v.string('must be a string'), v.maxLength(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters long`)),
);

/**
 * A reference to another node. Any string is taken, so that an id no node has is reported as
 * "refers to node 'x', which does not exist"; every reference the walk accepts names a node,
 * so it matches the node id pattern, which the document states.
 */
const nodeRef = v.pipe(v.string('must be a node id (a string)'), v.metadata({ pattern: NODE_ID_PATTERN.source }));
const nodeRefs = v.array(nodeRef, 'must be a list of node ids');

const integerIn = (min: number, max: number, unit = '') =>
  v.pipe(
    v.number('must be a number'),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}${unit}`),
    v.maxValue(max, `must be at most ${max}${unit}`),
  );

/** An expression: JSONata, checked for syntax by the walk. */
const expression = (text: string) =>
  v.pipe(v.string('must be a JSONata expression (a string)'), v.minLength(1, 'must not be empty'), v.description(text));

export const SVG_MEDIA_TYPE = 'image/svg+xml';
/**
 * Why an input cannot list SVG. Media types are sniffed from the bytes, and an SVG file is XML
 * text that no sniffer can tell from other XML (file-type calls it application/xml), so an
 * input listing it would refuse every SVG anyone sends; and an SVG is a document that can run
 * script, which the asset route would have to serve as an attachment anyway.
 */
export const SVG_REFUSAL =
  'cannot be image/svg+xml: files are recognised by their bytes, and an SVG is XML text that cannot be told apart from other XML, so no SVG would ever pass (an SVG can also carry script); take drawings as PNG (image/png) instead';

/** What an asset input accepts: sniffed media types and a largest size. Contracts show them too. */
export const ASSET_RESTRICTIONS = {
  media_types: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          v.string('must be a media type (a string)'),
          v.check(isMediaTypePattern, 'must be a lowercase media type such as image/png, or a whole type such as image/*'),
          v.check((t: string) => t !== SVG_MEDIA_TYPE, SVG_REFUSAL),
        ),
        'must be a list of media types',
      ),
      v.minLength(1, 'must list at least one media type (leave it out to accept any)'),
      v.maxLength(MAX_MEDIA_TYPES, `must list at most ${MAX_MEDIA_TYPES} media types`),
      v.check((l: string[]) => new Set(l).size === l.length, 'must not list a media type twice'),
      v.description(
        'Asset inputs: the media types accepted (`image/png`, or a whole type such as `image/*`), sniffed from the bytes; absent: any.',
      ),
    ),
  ),
  max_bytes: v.optional(
    v.pipe(
      integerIn(1, UPLOAD_MAX_BYTES, ' bytes'),
      v.description('Asset inputs: the largest file accepted; absent: up to the inline and upload limits.'),
    ),
  ),
};

/**
 * Header names and values. The record checks every own key, so `__proto__`, `prototype` and
 * `constructor` are refused with a word rather than dropped.
 */
const headers = v.pipe(
  // An array would otherwise pass as an object keyed "0", "1", ...
  plainObject('must be an object of header names to values'),
  ownRecord(
    v.pipe(
      v.string(),
      v.check((name: string) => !UNSUPPORTED_HEADER_NAMES.has(name), 'this header name is not supported'),
      v.regex(HEADER_NAME, 'is not a valid HTTP header name'),
    ),
    v.pipe(
      v.string('header values must be strings'),
      v.check((s) => !/[\r\n\0]/.test(s), 'header values cannot hold line breaks or NUL characters'),
    ),
    'must be an object of header names to values',
  ),
  v.description('Header values may hold owner secret references, `{{secrets.NAME}}`.'),
);

export const InputNode = v.pipe(
  v.strictObject(
    { type: v.literal('input'), value_type: InputValueType, value: RawValue, ...ASSET_RESTRICTIONS, label, description },
    objectMessage('an object'),
  ),
  v.description('An input: the request key. `value` must match `value_type`.'),
);
export const OutputNode = v.pipe(
  v.strictObject({ type: v.literal('output'), from: nodeRef, label, description }, objectMessage('an object')),
  v.description(
    "An output: the response key. Its value must be a string, a finite number, a boolean, or an asset of this run (an asset input or an http node's binary answer, passed on).",
  ),
);
export const TransformNode = v.strictObject(
  {
    type: v.literal('transform'),
    inputs: nodeRefs,
    expression: expression('JSONata, evaluated over `{ <input id>: value }`.'),
    description,
  },
  objectMessage('an object'),
);
export const HttpNode = v.pipe(
  v.strictObject(
    {
      type: v.literal('http'),
      inputs: v.optional(nodeRefs),
      // The defaults are documented, and applied when the node runs: a definition is stored as
      // written, so that its content hash does not change.
      method: v.optional(v.pipe(v.picklist(HTTP_METHODS, `must be one of ${HTTP_METHODS.join(', ')}`), v.metadata({ default: 'GET' }))),
      // No `format: uri`: `{{secrets.NAME}}` is not URI syntax until it is substituted.
      url: v.pipe(
        v.string('must be a URL (a string)'),
        v.check((s: string) => isAbsoluteHttpUrl(withSecretPlaceholders(s)), 'must be an absolute http:// or https:// URL'),
        v.description(
          'Absolute http(s) URL, checked by the address guard when connecting. May hold owner secret references, `{{secrets.NAME}}`, substituted when the node runs.',
        ),
      ),
      headers: v.optional(headers),
      body: v.optional(
        expression('JSONata over `inputs`; its result is sent as JSON. Not allowed with GET. `$secrets.NAME` reads an owner secret.'),
      ),
      body_asset: v.optional(
        v.pipe(
          v.string('must be the id of one of inputs (a string)'),
          v.metadata({ pattern: NODE_ID_PATTERN.source }),
          v.description(
            'One of `inputs` whose value is an asset: its bytes are sent as the raw body, its media type as Content-Type (unless `headers` set one). Not with `body` or GET.',
          ),
        ),
      ),
      timeout_ms: v.optional(v.pipe(integerIn(1, HTTP_TIMEOUT_MAX_MS, ' ms'), v.metadata({ default: DEFAULT_HTTP_TIMEOUT_MS }))),
      description,
    },
    objectMessage('an object'),
  ),
  v.description(
    'Its value is the parsed JSON (or text) response, or, for a binary answer (image, audio, video, octet-stream, PDF, ...), an asset `{url, media_type, bytes, sha256}` stored with the execution; a non-2xx response fails the node.',
  ),
);
export const DelayNode = v.strictObject(
  {
    type: v.literal('delay'),
    inputs: v.pipe(v.array(nodeRef, 'must list exactly one node id'), v.length(1, 'must list exactly one node id')),
    ms: integerIn(0, DELAY_MAX_MS, ' ms'),
    description,
  },
  objectMessage('an object'),
);

export const NODE_SCHEMAS = { input: InputNode, output: OutputNode, transform: TransformNode, http: HttpNode, delay: DelayNode } as const;
/** The object schema of a node type, under its description. */
export const nodeObject = (type: NodeType) => {
  const s = NODE_SCHEMAS[type];
  return 'pipe' in s ? s.pipe[0] : s;
};

export const Node = v.variant('type', [InputNode, OutputNode, TransformNode, HttpNode, DelayNode]);

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
