/**
 * What every HTTP handler shares: reading API Gateway proxy events, answering JSON, and the
 * one error-mapping middleware. Handlers stay a few lines: parse, call a service, answer.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { AppError, assertBodyWithin, toErrorResponse } from '../core/errors';
import { waitSeconds } from '../core/prefer';
import { isStoreUnavailable } from '../core/ports';
import type { Deps, DepsSource } from './deps';
import { errorFields } from './logger';

/** What a route handler answers, before it becomes an API Gateway proxy result. */
export interface RouteAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body that is not JSON (the docs page and its assets), sent as it is with its content type. */
  text?: { contentType: string; body: string };
  /** Bytes (an asset), sent base64-encoded as API Gateway's proxy format wants them. */
  binary?: Uint8Array;
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

function toResult(r: RouteAnswer, requestId: string): APIGatewayProxyResult {
  const headers: Record<string, string> = { 'x-request-id': requestId, ...r.headers };
  if (r.binary) return { statusCode: r.status, headers, body: Buffer.from(r.binary).toString('base64'), isBase64Encoded: true };
  if (r.text) return { statusCode: r.status, headers: { 'content-type': r.text.contentType, ...headers }, body: r.text.body };
  if (r.body === undefined) return { statusCode: r.status, headers, body: '' };
  return {
    statusCode: r.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(r.body),
  };
}

/**
 * A route: given where its dependencies come from, a Lambda handler (middy) with every failure
 * mapped through the error catalog. Each handler file exports `createHandler = httpHandler(…)`
 * and `handler = createHandler(lambdaDeps)`; the local runtime builds its own from the same.
 */
export const httpHandler = (fn: (req: RequestInfo) => Promise<RouteAnswer>, opts: { inlineAssets?: boolean } = {}) => (deps: DepsSource) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>()
    .use({
      onError: async (request) => {
        const requestId = request.context?.awsRequestId ?? request.event?.requestContext?.requestId ?? 'unknown';
        let e: unknown = request.error;
        if (!(e instanceof AppError) && isStoreUnavailable(e)) e = new AppError('ServiceUnavailable', 'the store is unavailable; retry shortly', {}, { cause: e });
        const { status, body } = toErrorResponse(e, requestId);
        if (status >= 500) deps().log.error('request failed', { request_id: requestId, status, route: request.event?.resource, ...errorFields(request.error) });
        const headers = e instanceof AppError ? { ...e.headers } : {};
        if (status === 503) headers['retry-after'] = '1';
        request.response = toResult({ status, body, headers }, requestId);
      },
    })
    .handler(async (event, context) => {
      const requestId = context?.awsRequestId ?? event.requestContext?.requestId ?? 'unknown';
      const d = deps();
      // API Gateway passes bodies up to 10 MB: the contract's limit is every route's to enforce
      // (the local gateway checks it too, which once hid that owner routes did not).
      // A route taking inline assets (lib/routes.ts inlineAssets) checks its own body in full.
      const text = bodyText(event);
      if (!opts.inlineAssets) assertBodyWithin(text, d.config.maxBodyBytes);
      const info: RequestInfo = {
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
      return toResult(await fn(info), requestId);
    });

/**
 * The request's `Prefer: wait=N` (RFC 7240), capped at the configured maximum; counted from
 * now, which is as close to the request's arrival as a handler gets.
 */
export function preferredWait(req: RequestInfo): { seconds: number; untilMs: number } {
  const seconds = waitSeconds(req.headerValues('prefer'), req.deps.config.maxWaitSeconds);
  return { seconds, untilMs: Date.now() + seconds * 1000 };
}

/** The caller identity the authorizer put on the request (see the authorizer handler). */
export interface CallerAuth {
  deploymentId: string;
  revision: number;
  deleted: boolean;
}

export function callerAuth(event: APIGatewayProxyEvent): CallerAuth {
  const a = (event.requestContext?.authorizer ?? {}) as Record<string, unknown>;
  const deploymentId = typeof a.deployment_id === 'string' ? a.deployment_id : '';
  // API Gateway hands context values to the integration as strings.
  const revision = Number(a.revision);
  if (!deploymentId || !Number.isInteger(revision)) throw new AppError('Unauthorized');
  return { deploymentId, revision, deleted: String(a.deleted) === 'true' };
}
