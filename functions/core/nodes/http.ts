/**
 * The http node: one request to an upstream (its value is the answer: JSON, text, or a stored
 * binary file), or a job: the request submits it, then the node polls until the job is over,
 * the execution waiting in the state machine between polls.
 */
import * as v from 'valibot';
import { NODE_ID_PATTERN } from '../ids';
import { answerObjectName, HTTP_ASSET_MAX_BYTES } from '../output-assets';
import { bodySecretsBinding, MissingSecretError, substituteSecrets, withSecretPlaceholders } from '../owner-secrets';
import type { SizedStream } from '../ports';
import { MissingResumeUrlError, resumeUrlBinding, substituteResumeUrls, withResumeUrlPlaceholders } from '../resume-refs';
import { ownRecord, plainObject } from '../schema-parts';
import { isAbsoluteHttpUrl } from '../values';
import { bodyExcerpt, HttpNodeError, LoopGuardError, safeUrl, sensitiveValues } from './http-errors';
import {
  defineNode,
  describeType,
  description,
  expression,
  FLOW_FIELDS,
  integerIn,
  listReferences,
  nodeRefs,
  objectMessage,
  reasonOf,
  Waiting,
  type FieldProblem,
  type NodeOf,
  type Outcome,
} from './kind';
import { scope, type RunContext } from './run-context';

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
  v.description("Header values may hold owner secret references, `{{secrets.NAME}}`, and a wait node's resume URL, `{{resume_url.ID}}`."),
);

/** 24 hours: the longest a polled job may take. */
export const POLL_TIMEOUT_MAX_MS = 86_400_000;
export const DEFAULT_POLL_TIMEOUT_MS = 3_600_000;
export const POLL_EVERY_MIN_MS = 1_000;
export const POLL_EVERY_MAX_MS = 3_600_000;
export const DEFAULT_POLL_EVERY_MS = 5_000;

/** A job: after its request (the submit), the node polls until the job is over. */
const PollSpec = v.pipe(
  v.strictObject(
    {
      url: expression(
        "JSONata over the submit's answer giving the absolute URL to poll (GET), with the node's headers and secrets and the same address and loop guards.",
      ),
      every_ms: v.optional(
        v.pipe(
          integerIn(POLL_EVERY_MIN_MS, POLL_EVERY_MAX_MS, ' ms'),
          v.metadata({ default: DEFAULT_POLL_EVERY_MS }),
          v.description(
            'The first interval between polls. Polls keep it for a minute, then each interval is 1.5 times the last, up to one a minute (or `every_ms` if longer). A `Retry-After` on a poll answer (1 s to 1 h) sets the next interval instead.',
          ),
        ),
      ),
      done: expression('JSONata over a poll answer: true once the job is over, whether it succeeded or failed.'),
      failed: v.optional(expression('JSONata over the last poll answer: true when the job failed; the node then fails with `error`.')),
      error: v.optional(expression("JSONata over the last poll answer: the failure's text, when `failed` is true.")),
      value: v.optional(
        expression(
          "JSONata over the last poll answer: the node's value (default: the whole answer; a binary answer is stored as an asset).",
        ),
      ),
      timeout_ms: v.optional(
        v.pipe(
          integerIn(1_000, POLL_TIMEOUT_MAX_MS, ' ms'),
          v.metadata({ default: DEFAULT_POLL_TIMEOUT_MS }),
          v.description('The longest the whole node may take, the submit and every poll (up to 24 hours).'),
        ),
      ),
    },
    objectMessage('an object'),
  ),
  v.description(
    'A job: the node polls after its request until `done` is true. A poll answered 5xx or not at all is tried again at the next interval; a 4xx fails the node. Between polls the execution waits in the state machine, with nothing running.',
  ),
);

const HttpObject = v.strictObject(
  {
    type: v.literal('http'),
    inputs: v.optional(nodeRefs),
    // The defaults are documented, and applied when the node runs: a definition is stored as
    // written, so that its content hash does not change.
    method: v.optional(v.pipe(v.picklist(HTTP_METHODS, `must be one of ${HTTP_METHODS.join(', ')}`), v.metadata({ default: 'GET' }))),
    // No `format: uri`: `{{secrets.NAME}}` is not URI syntax until it is substituted.
    url: v.pipe(
      v.string('must be a URL (a string)'),
      v.check(
        (s: string) => isAbsoluteHttpUrl(withResumeUrlPlaceholders(withSecretPlaceholders(s))),
        'must be an absolute http:// or https:// URL',
      ),
      v.description(
        "Absolute http(s) URL, checked by the address guard when connecting. May hold owner secret references, `{{secrets.NAME}}`, and a wait node's resume URL, `{{resume_url.ID}}` (a job's webhook), substituted when the node runs.",
      ),
    ),
    headers: v.optional(headers),
    body: v.optional(
      expression(
        "JSONata over `inputs`; its result is sent as JSON. Not allowed with GET. `$secrets.NAME` reads an owner secret; `$resume_url('ID')` gives wait node ID's resume URL (a job's webhook, so that it calls back).",
      ),
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
    timeout_ms: v.optional(
      v.pipe(
        integerIn(1, HTTP_TIMEOUT_MAX_MS, ' ms'),
        v.metadata({ default: DEFAULT_HTTP_TIMEOUT_MS }),
        v.description('Each request, the submit and every poll: the longest it may take.'),
      ),
    ),
    retry_interrupted: v.optional(
      v.pipe(
        v.boolean('must be true or false'),
        v.description(
          'A request cut short by a crash or a time-out before its answer was recorded is made again only when this is true, or the method is GET, PUT or DELETE (default: false for POST and PATCH, whose repeat could do the work twice); otherwise the execution fails naming the node. Every request carries `Idempotency-Key: <execution id>.<node id>` (unless `headers` set one), the same on every attempt.',
        ),
      ),
    ),
    poll: v.optional(PollSpec),
    ...FLOW_FIELDS,
    description,
  },
  objectMessage('an object'),
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

/** Methods whose repeat does no more than the first call did. */
const REPEATABLE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

type HttpFields = NodeOf<typeof HttpObject>;

/** The node's headers with its secrets in, and its Idempotency-Key unless it set one. */
function nodeHeaders(node: HttpFields, ctx: RunContext, id: string): Record<string, string> {
  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries(node.headers ?? {})) {
    Object.defineProperty(sent, name, {
      value: substituteResumeUrls(substituteSecrets(value, ctx.secrets), ctx.resumeUrls),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  if (ctx.executionId !== undefined && !hasHeader(sent, 'idempotency-key')) sent['Idempotency-Key'] = `${ctx.executionId}.${id}`;
  return sent;
}

interface Answer {
  headers: Record<string, string>;
  /** The parsed JSON (or text) answer, or the stored binary answer's view. */
  value: unknown;
}

/** One request of the node (the submit, or a poll); a non-2xx answer throws HttpNodeError. */
async function request(
  node: HttpFields,
  ctx: RunContext,
  id: string,
  call: {
    url: string;
    method: string;
    headers: Record<string, string>;
    body?: string | SizedStream;
    /** Headers the node itself set: their values never come back in an error excerpt. */
    own?: Record<string, string>;
  },
): Promise<Answer> {
  // Checked after the secrets are in: a host may come from one.
  ctx.guard(call.url);
  const sent = { ...call.headers };
  const response = await ctx.http({
    method: call.method,
    url: call.url,
    headers: sent,
    ...(call.body === undefined ? {} : { body: call.body }),
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
    const excerpt = bodyExcerpt(response.body, sensitiveValues(call.url, call.own ?? call.headers));
    throw new HttpNodeError(response.status, `HTTP ${response.status} from ${safeUrl(call.url)}${excerpt ? `: ${excerpt}` : ''}`);
  }
  if (stream !== undefined) {
    if (ctx.objects === undefined) throw new Error('a binary answer cannot be kept here: no object storage');
    const stored = await ctx.objects.store(answerObjectName(id), stream, response.headers['content-type'], HTTP_ASSET_MAX_BYTES);
    ctx.hold({ ref: stored.ref, view: { ...stored.view } });
    return { headers: response.headers, value: { ...stored.view } };
  }
  return { headers: response.headers, value: parseResponseBody(response.body) };
}

/** The submit: the node's own request, with its body from `body` or `body_asset`. */
async function submit(node: HttpFields, values: readonly unknown[], ctx: RunContext, id: string): Promise<Answer> {
  const url = substituteResumeUrls(substituteSecrets(node.url, ctx.secrets), ctx.resumeUrls);
  const headers = nodeHeaders(node, ctx, id);
  const own = { ...headers };
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
    if (!hasHeader(headers, 'content-type')) headers['content-type'] = held.ref.media_type;
  } else if (node.body !== undefined) {
    const value = await ctx.evaluate(node.body, scope(node.inputs ?? [], values), {
      secrets: bodySecretsBinding(node.body, ctx.secrets),
      resume_url: resumeUrlBinding(node.body, ctx.resumeUrls),
    });
    if (value !== undefined) {
      body = JSON.stringify(value);
      if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'application/json';
    }
  }
  return request(node, ctx, id, { url, method: node.method ?? 'GET', headers, own, ...(body === undefined ? {} : { body }) });
}

/**
 * When the next poll is due after `polls` polls of a job submitted at `since`: every `every`
 * ms for the first minute, then 1.5 times the last interval, up to a minute (or `every` if
 * longer); an upstream's Retry-After, within the node's bounds, instead.
 */
export function nextPollDelayMs(every: number, polls: number, since: number, now: number, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.min(Math.max(retryAfter, POLL_EVERY_MIN_MS), POLL_EVERY_MAX_MS);
  if (now - since < 60_000) return every;
  const steady = Math.max(1, Math.floor(60_000 / every));
  return Math.min(every * 1.5 ** Math.max(0, polls - steady), Math.max(every, 60_000));
}

/** Retry-After as milliseconds (seconds or an HTTP date), or undefined. */
function retryAfterMs(headers: Record<string, string>, now: number): number | undefined {
  const raw = Object.entries(headers)
    .find(([k]) => k.toLowerCase() === 'retry-after')?.[1]
    ?.trim();
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A short status for views: the answer's own `status` field, when it has one. */
function upstreamStatus(answer: unknown): string | undefined {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return undefined;
  const status = (answer as Record<string, unknown>).status;
  return typeof status === 'string' || typeof status === 'number' ? String(status).slice(0, 40) : undefined;
}

/** The object poll expressions see: the answer's fields, or `{ answer }` for one that is not an object. */
function jobScope(answer: unknown): Record<string, unknown> {
  if (typeof answer === 'object' && answer !== null && !Array.isArray(answer)) return answer as Record<string, unknown>;
  return { answer };
}

/** A polled job that said it failed: its own words, cut short and without credentials. */
export class JobFailedError extends Error {
  override readonly name = 'JobFailedError';
  constructor(text: string) {
    super(`the job failed: ${bodyExcerpt(text)}`);
  }
}

/** What a job's node keeps between polls. */
interface PollMemo {
  /** The submit's answer, which `poll.url` reads. */
  job: unknown;
  polls: number;
  /** When the submit was sent: the poll time-out runs from here. */
  since: number;
  /** When the next poll is due. */
  until: number;
}

const asPollMemo = (memo: Readonly<Record<string, unknown>>): PollMemo => ({
  job: memo.job,
  polls: typeof memo.polls === 'number' ? memo.polls : 0,
  since: typeof memo.since === 'number' ? memo.since : 0,
  until: typeof memo.until === 'number' ? memo.until : 0,
});

function waitForPoll(
  poll: NonNullable<HttpFields['poll']>,
  memo: PollMemo,
  polls: number,
  now: number,
  extra: { retryAfter?: number; status?: string } = {},
): Waiting {
  const limit = poll.timeout_ms ?? DEFAULT_POLL_TIMEOUT_MS;
  const next = Math.min(
    now + nextPollDelayMs(poll.every_ms ?? DEFAULT_POLL_EVERY_MS, polls, memo.since, now, extra.retryAfter),
    memo.since + limit,
  );
  const memoNext: PollMemo = { ...memo, polls, until: next };
  return new Waiting(next, { ...memoNext }, { polls, ...(extra.status === undefined ? {} : { status: extra.status }) });
}

/** One poll of a job: its value when it is over, or the wait for the next poll. */
async function pollOnce(node: HttpFields, ctx: RunContext, id: string, memo: PollMemo): Promise<Outcome> {
  const poll = node.poll;
  if (poll === undefined) throw new Error('this node polls nothing');
  const now = ctx.now();
  if (now < memo.until) return new Waiting(memo.until, { ...memo }, { polls: memo.polls });
  const limit = poll.timeout_ms ?? DEFAULT_POLL_TIMEOUT_MS;
  if (now - memo.since >= limit) {
    throw new Error(
      `the job did not finish within ${limit} ms (poll.timeout_ms), after ${memo.polls} ${memo.polls === 1 ? 'poll' : 'polls'}`,
    );
  }
  const url = await ctx.evaluate(poll.url, jobScope(memo.job), { secrets: bodySecretsBinding(poll.url, ctx.secrets) });
  if (typeof url !== 'string' || !isAbsoluteHttpUrl(url)) {
    throw new Error(`poll.url must give an absolute http or https URL, got ${url === undefined ? 'nothing' : describeType(url)}`);
  }
  const polls = memo.polls + 1;
  let answer: Answer;
  try {
    answer = await request(node, ctx, id, { url, method: 'GET', headers: nodeHeaders(node, ctx, id) });
  } catch (e) {
    // A 5xx, or no answer at all: the job may still be going; try again at the next interval.
    const again = e instanceof HttpNodeError ? e.httpStatus >= 500 : !(e instanceof LoopGuardError || e instanceof MissingSecretError);
    if (!again || ctx.signal.aborted) throw e;
    return waitForPoll(poll, memo, polls, now);
  }
  const value = answer.value;
  // A binary answer is the job's result itself.
  const binary = ctx.held(value) !== null;
  const done = binary || (await ctx.evaluate(poll.done, jobScope(value))) === true;
  if (!done) {
    const status = upstreamStatus(value);
    const retryAfter = retryAfterMs(answer.headers, now);
    return waitForPoll(poll, memo, polls, now, {
      ...(retryAfter === undefined ? {} : { retryAfter }),
      ...(status === undefined ? {} : { status }),
    });
  }
  if (!binary && poll.failed !== undefined && (await ctx.evaluate(poll.failed, jobScope(value))) === true) {
    const text = poll.error === undefined ? undefined : await ctx.evaluate(poll.error, jobScope(value));
    throw new JobFailedError(typeof text === 'string' ? text : text === undefined ? 'no reason given' : JSON.stringify(text));
  }
  if (binary || poll.value === undefined) return { value };
  return { value: await ctx.evaluate(poll.value, jobScope(value)) };
}

export const http = defineNode({
  object: HttpObject,
  description:
    "Its value is the parsed JSON (or text) response, or, for a binary answer (image, audio, video, octet-stream, PDF, ...), an asset `{url, media_type, bytes, sha256}` stored with the execution; a non-2xx response fails the node. With `poll`, the request submits a job and the value is the finished job's.",
  code: 'h',
  role: null,
  feeds: true,
  references: (raw) => listReferences(raw),
  dependencies: (node) => node.inputs ?? [],
  // A job: every expression field in use.
  example: {
    type: 'http',
    method: 'POST',
    url: 'https://api.example/v1/jobs',
    inputs: ['a', 'b'],
    body: '{"prompt": a & " " & b}',
    poll: {
      url: "'https://api.example/v1/jobs/' & id",
      every_ms: 5000,
      done: "status in ['succeeded', 'failed']",
      failed: "status = 'failed'",
      error: 'error',
      value: 'output',
      timeout_ms: 3600000,
    },
    if: "a != ''",
  },
  expressions: ['body', 'poll.url', 'poll.done', 'poll.failed', 'poll.error', 'poll.value', 'if'],
  secrets: { templates: ['url', 'headers'], bindings: ['body', 'poll.url'] },
  resumeUrls: { templates: ['url', 'headers'], bindings: ['body'] },
  durability: 'recorded',
  repeatable: (node) => node.retry_interrupted ?? REPEATABLE_METHODS.has(node.method ?? 'GET'),
  waits: (node) => node.poll !== undefined,
  longestMs: (node) =>
    node.poll === undefined ? (node.timeout_ms ?? DEFAULT_HTTP_TIMEOUT_MS) : (node.poll.timeout_ms ?? DEFAULT_POLL_TIMEOUT_MS),
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
    const poll = raw.poll;
    if (typeof poll === 'object' && poll !== null && !Array.isArray(poll)) {
      const p = poll as Record<string, unknown>;
      if (Object.hasOwn(p, 'error') && !Object.hasOwn(p, 'failed')) {
        problems.push({ at: ['poll', 'error'], reason: 'is read only when `failed` says the job failed: give `failed` too' });
      }
    }
    return problems;
  },
  async run(node, values, ctx, id) {
    const since = ctx.now();
    const answer = await submit(node, values, ctx, id);
    if (node.poll === undefined) return { value: answer.value };
    // The first poll is due at once only if the submit answered with the finished job.
    const memo: PollMemo = { job: answer.value, polls: 0, since, until: since };
    return pollOnce(node, ctx, id, memo);
  },
  resume: (node, _values, ctx, id, memo) => pollOnce(node, ctx, id, asPollMemo(memo)),
  callerReason(e) {
    if (e instanceof HttpNodeError) return `upstream answered ${e.httpStatus}`;
    if (e instanceof LoopGuardError) return "the loop guard refused its URL (this service's own API)";
    if (e instanceof MissingSecretError || e instanceof MissingResumeUrlError) return 'the pipeline is missing a setting';
    if (e instanceof JobFailedError) return 'the job failed';
    const reason = reasonOf(e);
    if (/poll\.timeout_ms/.test(reason)) return 'the job did not finish in time';
    return /timed? ?out/i.test(reason) ? 'the upstream request timed out' : 'the upstream request failed';
  },
});
