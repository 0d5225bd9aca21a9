/** The http node: one request to an upstream; its value is the answer (JSON, text, or a stored binary file). */
import * as v from 'valibot';
import { NODE_ID_PATTERN } from '../ids';
import { answerObjectName, HTTP_ASSET_MAX_BYTES } from '../output-assets';
import { bodySecretsBinding, MissingSecretError, substituteSecrets, withSecretPlaceholders } from '../owner-secrets';
import type { SizedStream } from '../ports';
import { ownRecord, plainObject } from '../schema-parts';
import { isAbsoluteHttpUrl } from '../values';
import { bodyExcerpt, HttpNodeError, LoopGuardError, safeUrl, sensitiveValues } from './http-errors';
import {
  defineNode,
  description,
  expression,
  integerIn,
  listReferences,
  nodeRefs,
  objectMessage,
  reasonOf,
  type FieldProblem,
} from './kind';
import { scope } from './run-context';

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const HTTP_TIMEOUT_MAX_MS = 30_000;
export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;
/** Most an http node's JSON or text answer may take. */
export const HTTP_MAX_RESPONSE_BYTES = 1_048_576;

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Names valibot's record() skips silently; refusing them beats dropping a header without a word.
const UNSUPPORTED_HEADER_NAMES = new Set(['__proto__', 'prototype', 'constructor']);

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

const NO_BODY_ON_GET = 'a GET request cannot carry a body; use POST, PUT, PATCH or DELETE';

function parseResponseBody(body: string): unknown {
  if (body.trim() === '') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

const hasHeader = (h: Record<string, string>, name: string): boolean => Object.keys(h).some((k) => k.toLowerCase() === name);

export const http = defineNode({
  object: v.strictObject(
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
  description:
    'Its value is the parsed JSON (or text) response, or, for a binary answer (image, audio, video, octet-stream, PDF, ...), an asset `{url, media_type, bytes, sha256}` stored with the execution; a non-2xx response fails the node.',
  code: 'h',
  role: null,
  feeds: true,
  references: (raw) => listReferences(raw),
  dependencies: (node) => node.inputs ?? [],
  example: { type: 'http', method: 'POST', url: 'https://api.example/v1/greet', inputs: ['a', 'b'], body: '{"name": a, "greeting": b}' },
  expressions: ['body'],
  secrets: { templates: ['url', 'headers'], bindings: ['body'] },
  checks(raw) {
    const problems: FieldProblem[] = [];
    const method = raw.method ?? 'GET';
    if (Object.hasOwn(raw, 'body') && method === 'GET') problems.push({ at: ['body'], reason: NO_BODY_ON_GET });
    if (typeof raw.body_asset === 'string') {
      if (Object.hasOwn(raw, 'body')) {
        problems.push({ at: ['body_asset'], reason: 'cannot be given with body: the request carries one or the other' });
      } else if (method === 'GET') problems.push({ at: ['body_asset'], reason: NO_BODY_ON_GET });
      if (!Array.isArray(raw.inputs) || !raw.inputs.includes(raw.body_asset)) {
        problems.push({ at: ['body_asset'], reason: "must be one of the node's inputs" });
      }
    }
    return problems;
  },
  async run(node, values, ctx, id) {
    const url = substituteSecrets(node.url, ctx.secrets);
    // Checked after the secrets are in: a host may come from one.
    ctx.guard(url);
    const sent: Record<string, string> = {};
    for (const [name, value] of Object.entries(node.headers ?? {})) {
      Object.defineProperty(sent, name, {
        value: substituteSecrets(value, ctx.secrets),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    const nodeHeaders = { ...sent };
    let body: string | SizedStream | undefined;
    if (node.body_asset !== undefined) {
      const i = (node.inputs ?? []).indexOf(node.body_asset);
      const held = ctx.held(values[i]);
      if (held === null) throw new Error(`body_asset '${node.body_asset}' is not an asset`);
      if (held.ref.bytes > HTTP_ASSET_MAX_BYTES) {
        throw new Error(
          `body_asset '${node.body_asset}' is ${held.ref.bytes} bytes, more than the http node's asset limit of ${HTTP_ASSET_MAX_BYTES} bytes`,
        );
      }
      if (ctx.objects === undefined) throw new Error('assets cannot be sent here: no object storage');
      body = await ctx.objects.open(held.ref);
      if (!hasHeader(sent, 'content-type')) sent['content-type'] = held.ref.media_type;
    } else if (node.body !== undefined) {
      const value = await ctx.evaluate(node.body, scope(node.inputs ?? [], values), {
        secrets: bodySecretsBinding(node.body, ctx.secrets),
      });
      if (value !== undefined) {
        body = JSON.stringify(value);
        if (!hasHeader(sent, 'content-type')) sent['content-type'] = 'application/json';
      }
    }
    const response = await ctx.http({
      method: node.method ?? 'GET',
      url,
      headers: sent,
      ...(body === undefined ? {} : { body }),
      timeoutMs: node.timeout_ms ?? DEFAULT_HTTP_TIMEOUT_MS,
      signal: ctx.signal,
      maxResponseBytes: HTTP_MAX_RESPONSE_BYTES,
      ...(ctx.objects === undefined ? {} : { maxBinaryResponseBytes: HTTP_ASSET_MAX_BYTES }),
    });
    const { stream } = response;
    if (stream !== undefined && (response.status < 200 || response.status > 299 || ctx.objects === undefined)) {
      // A failed call's binary body is not read: ending it closes the connection.
      await stream[Symbol.asyncIterator]().return?.();
    }
    if (response.status < 200 || response.status > 299) {
      const excerpt = bodyExcerpt(response.body, sensitiveValues(url, nodeHeaders));
      throw new HttpNodeError(response.status, `HTTP ${response.status} from ${safeUrl(url)}${excerpt ? `: ${excerpt}` : ''}`);
    }
    if (stream !== undefined) {
      if (ctx.objects === undefined) throw new Error('a binary answer cannot be kept here: no object storage');
      const stored = await ctx.objects.store(answerObjectName(id), stream, response.headers['content-type'], HTTP_ASSET_MAX_BYTES);
      ctx.hold({ ref: stored.ref, view: { ...stored.view } });
      return { ...stored.view };
    }
    return parseResponseBody(response.body);
  },
  callerReason(e) {
    if (e instanceof HttpNodeError) return `upstream answered ${e.httpStatus}`;
    if (e instanceof LoopGuardError) return "the loop guard refused its URL (this service's own API)";
    if (e instanceof MissingSecretError) return 'the pipeline is missing a setting';
    return /timed? ?out/i.test(reasonOf(e)) ? 'the upstream request timed out' : 'the upstream request failed';
  },
});
