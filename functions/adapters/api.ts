/**
 * What every HTTP handler shares: reading API Gateway proxy events, answering JSON, and the
 * one error-mapping middleware. Handlers stay a few lines: parse, call a service, answer.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { assertBodySize } from '../core/body-size';
import { AppError, toErrorResponse } from '../core/errors';
import { assertJsonMediaType } from '../core/json-body';
import type { Limits } from '../core/consumers';
import { spendRate, withLimitHeaders } from '../services/limits.service';
import { waitSeconds } from '../core/prefer';
import { isStoreUnavailable } from '../core/ports';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Deps, DepsSource } from './deps';
import { awslambda, type StreamingHandler } from './lambda-streaming';
import { errorFields } from './logger';

/** What a route handler answers, before it becomes an API Gateway proxy result. */
export interface RouteAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body that is not JSON (the docs page and its assets), sent as it is with its content type. */
  text?: { contentType: string; body: string };
}

export interface RequestInfo {
  event: APIGatewayProxyEvent;
  deps: Deps;
  requestId: string;
  /**
   * Absolute base URL, no trailing slash: PIPEGATE_PUBLIC_URL when configured, else the one the
   * caller used (stage and any prefix included).
   */
  baseUrl: string;
  header(name: string): string | undefined;
  /** Every value of a header that may repeat (e.g. `Prefer`), in order. */
  headerValues(name: string): string[];
  param(name: string): string;
  query(name: string): string | undefined;
}

export const json = (status: number, body?: unknown, headers: Record<string, string> = {}): RouteAnswer => ({
  status,
  body,
  headers,
});

export function headerOf(headers: APIGatewayProxyEvent['headers'] | null | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === wanted && v !== undefined) return v;
  return undefined;
}

export function headerValuesOf(event: APIGatewayProxyEvent, name: string): string[] {
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(event.multiValueHeaders ?? {})) if (k.toLowerCase() === wanted && v) return v;
  const one = headerOf(event.headers, name);
  return one === undefined ? [] : [one];
}

export function baseUrlOf(event: APIGatewayProxyEvent): string {
  const proto = (headerOf(event.headers, 'x-forwarded-proto') ?? 'https').split(',')[0]?.trim() || 'https';
  const host = headerOf(event.headers, 'host') ?? event.requestContext?.domainName ?? 'localhost';
  // requestContext.path carries what precedes the route (the stage, a custom domain's base path).
  const full = event.requestContext?.path ?? event.path;
  const route = event.path.replace(/\/+$/, '');
  const trimmed = full.replace(/\/+$/, '');
  const prefix = route && trimmed.endsWith(route) ? trimmed.slice(0, trimmed.length - route.length) : '';
  return `${proto}://${host}${prefix}`;
}

export function bodyText(event: APIGatewayProxyEvent): string | null {
  if (event.body === null || event.body === undefined) return null;
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

/** The body of a route that takes JSON: 415 for a non-empty body sent as anything else, as on every such route. */
export function jsonBodyText(event: APIGatewayProxyEvent): string | null {
  const text = bodyText(event);
  assertJsonMediaType(text, headerOf(event.headers, 'content-type'));
  return text;
}

/** An answer's body as sent, buffered or streamed: the route's text, its JSON, or nothing. */
function serialized(r: RouteAnswer): { contentType: Record<string, string>; text: string } {
  if (r.text) return { contentType: { 'content-type': r.text.contentType }, text: r.text.body };
  if (r.body === undefined) return { contentType: {}, text: '' };
  return { contentType: { 'content-type': 'application/json; charset=utf-8' }, text: JSON.stringify(r.body) };
}

function toResult(r: RouteAnswer, requestId: string): APIGatewayProxyResult {
  const { contentType, text } = serialized(r);
  return { statusCode: r.status, headers: { ...contentType, 'x-request-id': requestId, ...r.headers }, body: text };
}

/**
 * A route: given where its dependencies come from, a Lambda handler (middy) with every failure
 * mapped through the error catalog. Each handler file exports `createHandler = httpHandler(…)`
 * and `handler = createHandler(lambdaDeps)`; the local runtime builds its own from the same.
 */
export const httpHandler =
  (fn: (req: RequestInfo) => Promise<RouteAnswer>, opts: { inlineAssets?: boolean } = {}) =>
  (deps: DepsSource) =>
    middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>()
      .use({
        onError: async (request) => {
          const requestId = request.context?.awsRequestId ?? request.event?.requestContext?.requestId ?? 'unknown';
          request.response = toResult(errorAnswer(request.error, requestId, deps, request.event?.resource), requestId);
        },
      })
      .handler(async (event, context) => {
        const requestId = context?.awsRequestId ?? event.requestContext?.requestId ?? 'unknown';
        const d = deps();
        // Every request with a caller's key spends its rate limit first (services/limits.service.ts).
        const rate = hasCallerAuth(event) ? await spendRate(d, callerAuth(event)) : null;
        const answer = await fn(requestInfo(event, d, requestId, opts));
        return toResult(rate ? { ...answer, headers: withLimitHeaders(answer.headers, [rate]) } : answer, requestId);
      });

const hasCallerAuth = (event: APIGatewayProxyEvent): boolean => typeof event.requestContext?.authorizer?.deployment_id === 'string';

/** Every failure through the catalog; unexpected ones (5xx) logged, without the request's secrets. */
function errorAnswer(error: unknown, requestId: string, deps: DepsSource, route: string | undefined): RouteAnswer {
  let e: unknown = error;
  if (!(e instanceof AppError) && isStoreUnavailable(e))
    e = new AppError('ServiceUnavailable', 'the store is unavailable; retry shortly', {}, { cause: e });
  const { status, body } = toErrorResponse(e, requestId);
  if (status >= 500) deps().log.error('request failed', { request_id: requestId, status, route, ...errorFields(error) });
  const headers = e instanceof AppError ? { ...e.headers } : {};
  if (status === 503) headers['retry-after'] = '1';
  return { status, body, headers };
}

function requestInfo(event: APIGatewayProxyEvent, d: Deps, requestId: string, opts: { inlineAssets?: boolean }): RequestInfo {
  // API Gateway passes bodies up to 10 MB: the contract's limit is every route's to enforce
  // (the local gateway checks it too, which once hid that owner routes did not). A route
  // taking inline assets (lib/routes.ts inlineAssets) is held to its ceiling here; what its
  // ASSET values may take is known only once its parser has read them.
  const text = bodyText(event);
  assertBodySize(text === null ? 0 : Buffer.byteLength(text, 'utf8'), {
    maxBodyBytes: d.config.maxBodyBytes,
    inlineAssets: opts.inlineAssets,
  });
  return {
    event,
    deps: d,
    requestId,
    // A configured public URL wins: the Host header is the client's to choose.
    baseUrl: d.config.publicUrl ?? baseUrlOf(event),
    header: (name) => headerOf(event.headers, name),
    headerValues: (name) => headerValuesOf(event, name),
    param: (name) => event.pathParameters?.[name] ?? '',
    query: (name) => event.queryStringParameters?.[name] ?? undefined,
  };
}

/** A streamed answer: status and headers first, then the body as it comes. */
export interface StreamedAnswer {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

/**
 * A route whose integration streams (lib/routes.ts `streams`): a Lambda streaming handler that
 * writes API Gateway's streamed proxy format, so the body passes through in chunks, as fast as
 * the client takes them, and is never held whole. Failures before the first byte are answered
 * through the catalog like any route's; once the status is sent a failure can only cut the
 * body short, so it is logged and the stream destroyed (the client sees a short body).
 */
export const streamedHttpHandler =
  (fn: (req: RequestInfo) => Promise<StreamedAnswer>, opts: { inlineAssets?: boolean } = {}) =>
  (deps: DepsSource): StreamingHandler =>
    awslambda().streamifyResponse(async (event, responseStream, context) => {
      const requestId = context?.awsRequestId ?? event.requestContext?.requestId ?? 'unknown';
      let answer: StreamedAnswer;
      try {
        const d = deps();
        // A stream opened with a caller's key spends its rate limit, as every other caller request does.
        const rate = hasCallerAuth(event) ? await spendRate(d, callerAuth(event)) : null;
        answer = await fn(requestInfo(event, d, requestId, opts));
        if (rate) answer = { ...answer, headers: withLimitHeaders(answer.headers, [rate]) };
      } catch (e) {
        const failed = toResult(errorAnswer(e, requestId, deps, event.resource), requestId);
        const out = awslambda().HttpResponseStream.from(responseStream, {
          statusCode: failed.statusCode,
          headers: stringHeaders(failed.headers),
        });
        await endWith(out, failed.body);
        return;
      }
      const out = awslambda().HttpResponseStream.from(responseStream, {
        statusCode: answer.status,
        headers: { 'x-request-id': requestId, ...answer.headers },
      });
      let sourceFailed = false;
      async function* source(): AsyncIterable<Uint8Array> {
        try {
          yield* answer.body;
        } catch (e) {
          // Node 24 tears a pipeline down by throwing into its source (Node 20 returns it): a
          // throw that arrives once the response stream is already destroyed is the client
          // going away, not the source failing.
          sourceFailed = !out.destroyed;
          throw e;
        }
      }
      try {
        // The metadata goes out on the first write() only (the runtime's rule): an empty object
        // still needs one, so an empty chunk goes first.
        out.write(new Uint8Array(0));
        await pipeline(Readable.from(source(), { objectMode: false }), out);
      } catch (e) {
        // A client that goes away is ordinary; a store that fails mid-body is not.
        const fields = { request_id: requestId, route: event.resource, ...errorFields(e) };
        if (sourceFailed) deps().log.error('streamed answer cut short', fields);
        else deps().log.warn('streamed answer cut short: the client went away', fields);
        out.destroy();
      }
    });

/**
 * A JSON route whose answer streams (lib/routes.ts `streams`): the same answers as httpHandler,
 * sent through Lambda response streaming. For routes whose body carries execution values (a
 * result, a run, an owner's view): pulled back from the claim check they can pass Lambda's 6 MB
 * buffered response limit, which would fail the read with an answer that names nothing; a
 * streamed body has no such limit. The text is still built whole (the values are in memory
 * anyway) and handed over in slices, so the response stream's backpressure applies.
 */
export const streamedJsonHandler = (fn: (req: RequestInfo) => Promise<RouteAnswer>, opts: { inlineAssets?: boolean } = {}) =>
  streamedHttpHandler(async (req) => streamedFromAnswer(await fn(req)), opts);

/** Slices of a streamed JSON answer: small enough that one never holds up the stream for long. */
export const STREAMED_JSON_CHUNK_BYTES = 64 * 1024;

/** A buffered answer as a streamed one: the same status, headers and bytes as toResult sends. */
export function streamedFromAnswer(r: RouteAnswer): StreamedAnswer {
  const { contentType, text } = serialized(r);
  const headers: Record<string, string> = { ...contentType, ...r.headers };
  const bytes = Buffer.from(text, 'utf8');
  async function* slices(): AsyncIterable<Uint8Array> {
    for (let at = 0; at < bytes.length; at += STREAMED_JSON_CHUNK_BYTES) yield bytes.subarray(at, at + STREAMED_JSON_CHUNK_BYTES);
  }
  return { status: r.status, headers: { ...headers, 'content-length': String(bytes.length) }, body: slices() };
}

/** A stream of server-sent events as a streamed route's answer. */
export function eventStreamAnswer(events: AsyncIterable<string>): StreamedAnswer {
  async function* utf8(): AsyncIterable<Uint8Array> {
    for await (const chunk of events) yield Buffer.from(chunk, 'utf8');
  }
  return {
    status: 200,
    // no-transform: a proxy that compresses or buffers would hold events back.
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' },
    body: utf8(),
  };
}

/** write(), then end(): end(chunk) alone would bypass the metadata (the runtime writes it on write()). */
function endWith(out: Writable, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    out.write(text);
    out.end((err?: Error | null) => (err ? reject(err) : resolve()));
  });
}

const stringHeaders = (h: APIGatewayProxyResult['headers']): Record<string, string> =>
  Object.fromEntries(Object.entries(h ?? {}).map(([k, v]) => [k, String(v)]));

/**
 * The request's `Prefer: wait=N` (RFC 7240), capped at the configured maximum; counted from
 * now, which is as close to the request's arrival as a handler gets.
 */
export function preferredWait(req: RequestInfo): { seconds: number; untilMs: number } {
  const seconds = waitSeconds(req.headerValues('prefer'), req.deps.config.maxWaitSeconds);
  return { seconds, untilMs: Date.now() + seconds * 1000 };
}

/** The client's address as API Gateway saw it (the local gateway sets it the same way). */
export const sourceAddress = (event: APIGatewayProxyEvent): string => event.requestContext?.identity?.sourceIp ?? 'unknown';

/** The caller identity the authorizer put on the request (see the authorizer handler). */
export interface CallerAuth {
  deploymentId: string;
  revision: number;
  deleted: boolean;
  /** The consumer whose key was used; absent for the deployment's own key. */
  consumerId?: string;
  /** Absent: none (the same as both null). */
  limits?: Limits;
}

export function callerAuth(event: APIGatewayProxyEvent): CallerAuth {
  const a = (event.requestContext?.authorizer ?? {}) as Record<string, unknown>;
  const deploymentId = typeof a.deployment_id === 'string' ? a.deployment_id : '';
  // API Gateway hands context values to the integration as strings.
  const revision = Number(a.revision);
  if (!deploymentId || !Number.isInteger(revision)) throw new AppError('Unauthorized');
  const positive = (x: unknown): number | null => {
    const n = Number(x);
    return x !== undefined && x !== null && Number.isInteger(n) && n > 0 ? n : null;
  };
  const requests = positive(a.rate_requests);
  const perSeconds = positive(a.rate_per_seconds);
  const executions = positive(a.quota_executions);
  const per = a.quota_per === 'day' || a.quota_per === 'month' ? a.quota_per : null;
  const consumerId = typeof a.consumer_id === 'string' && a.consumer_id !== '' ? a.consumer_id : undefined;
  return {
    deploymentId,
    revision,
    deleted: String(a.deleted) === 'true',
    ...(consumerId === undefined ? {} : { consumerId }),
    limits: {
      rate_limit: requests !== null && perSeconds !== null ? { requests, per_seconds: perSeconds } : null,
      quota: executions !== null && per !== null ? { executions, per } : null,
    },
  };
}
