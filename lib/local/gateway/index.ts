/**
 * API Gateway (REST API, Lambda proxy integration) on one machine: matches the API's methods,
 * builds the proxy event, runs the REQUEST authorizer and evaluates its IAM policy, stands in
 * a bearer token for IAM on owner routes, checks handler responses as strictly as API Gateway,
 * and answers by itself with the API's Gateway Responses, so a handler that works here works
 * there. The pieces live beside this file, one concern each.
 */
import { randomUUID } from 'node:crypto';
import { createServer, maxHeaderSize, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { bodyCeiling, bodySizeProblem } from '../../../functions/core/body-size';
import { ERRORS, unauthorizedBody } from '../../../functions/core/errors';
import { GATEWAY_RESPONSES, type GatewayResponse } from '../../gateway-responses';
import { drainRest } from '../drain';
import { createLambdaContext, LOCAL_ACCOUNT, LOCAL_REGION } from '../lambda-context';
import { createAuthorize, describe, ownerTokenCheck, UNCACHED, type AuthorizerSettings, type RequestAuthorizer } from './authorizer';
import { API_ID, authorizerEvent, eventParts, proxyEvent, readBody, STAGE, type ApiIdentity } from './proxy-event';
import { checkProxyResult } from './proxy-result';
import { gatewayReplies, json, methodNotAllowed, send, type Reply } from './replies';
import { compileRoutes, matchResource, normaliseBasePath, stripBasePath, trimSlash, type GatewayAuth, type GatewayRoute } from './routing';
import { invokeBufferedInProcess, invokeStreamingInProcess, readStreamed, type LocalFunction, type StreamInvoker } from './streaming';

export { createLambdaContext } from '../lambda-context';
export { wildcardMatch, wildcardMatcher, type AuthorizerSettings, type RequestAuthorizer } from './authorizer';
export type { GatewayRoute, GatewayAuth } from './routing';

/**
 * The HTTP server a local runtime listens with. Idle keep-alive connections live 65 s, as behind
 * API Gateway and load balancers, not Node's 5 s: a client retires an idle socket a second before
 * the server's advertised time-out, and with 5 s a client whose event loop stalls for a second
 * (a loaded machine) could send on a socket the server was closing (ECONNRESET).
 */
export function createLocalServer(listener: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer(listener);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on('clientError', answerUnreadable);
  return server;
}

/**
 * A request Node's parser cannot take never reaches the gateway: Node answers it alone, bare
 * (a 431 past `maxHeaderSize`, 16 KiB, a 400 for anything else it cannot parse). These say the
 * same in the API's JSON error shape, naming what was wrong.
 */
function answerUnreadable(err: NodeJS.ErrnoException & { bytesParsed?: number }, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const { status, message } = tooLarge ? ERRORS.RequestHeaderFieldsTooLarge : ERRORS.BadRequest;
  const body = JSON.stringify({
    error: message,
    detail: tooLarge
      ? `the request line and headers are larger than ${maxHeaderSize} bytes: send fewer or shorter headers`
      : `the request is not HTTP/1.1 this server can read (${err.code ?? 'unparsable'})`,
  });
  socket.end(
    `HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** A function behind a route: a buffered proxy handler or a streaming one (Lambda invokes either way). */
export type ProxyHandler = LocalFunction;
export type { BufferedHandler, StreamInvoker } from './streaming';
export type GatewayLog = (line: Record<string, unknown>) => void;

export interface GatewayOptions {
  /** The API's methods: lib/routes.ts, or the template's in the synthesized mode. */
  routes: readonly GatewayRoute[];
  /** Route `handler` name → the function its Lambda runs (invoked buffered: Invoke). */
  handlers: Record<string, ProxyHandler>;
  /**
   * Route `handler` name → its InvokeWithResponseStream, for methods that stream (`streams`).
   * Default: the in-process function of `handlers`, streamed.
   */
  streamInvokers?: Record<string, StreamInvoker>;
  /** The REQUEST authorizer guarding `apiKey` routes. */
  authorizer: RequestAuthorizer;
  /** Its identity sources and cache TTL (default: none, uncached, as the stack declares it). */
  authorizerSettings?: AuthorizerSettings;
  /** API Gateway's own answers (default: lib/gateway-responses.ts). */
  gatewayResponses?: readonly GatewayResponse[];
  /** Bearer token for `owner` routes (IAM stands in for it on AWS). */
  ownerToken: string;
  maxBodyBytes: number;
  /** A prefix the API is served under, such as `/api`; the route table does not include it. */
  basePath?: string;
  log?: GatewayLog;
  /** API Gateway's integration time-out (default 29 s): a slower handler is answered with 504. */
  integrationTimeoutMs?: number;
  /** Region, account, API id and stage the method ARNs name. */
  api?: Partial<ApiIdentity>;
  /**
   * The API's resource policy (the synthesized mode's): whether it lets a request to a method of
   * this authorization through. Refused requests get the ACCESS_DENIED gateway response.
   */
  resourcePolicy?: (auth: GatewayAuth, methodArn: string) => Promise<boolean>;
  /** A web ACL in front of the API (the synthesized mode's WAF): its reply, or undefined to let the request through. */
  firewall?: (req: IncomingMessage) => Reply | undefined;
}

const DEFAULT_INTEGRATION_TIMEOUT_MS = 29_000;

interface Handled {
  reply: Reply;
  route: string | null;
  cause?: string;
  /** A streamed answer's body, sent after the reply's status and headers. */
  body?: Readable;
}

export function createGateway(opts: GatewayOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const ownerAllowed = ownerTokenCheck(opts.ownerToken);
  const basePath = normaliseBasePath(opts.basePath);
  const resources = compileRoutes(opts.routes, new Set(Object.keys(opts.handlers)));
  const authorize = createAuthorize(opts.authorizer, opts.authorizerSettings ?? UNCACHED);
  const gateway = gatewayReplies(opts.gatewayResponses ?? GATEWAY_RESPONSES);
  const api: ApiIdentity = { region: LOCAL_REGION, account: LOCAL_ACCOUNT, apiId: API_ID, stage: STAGE, ...opts.api };
  const log = opts.log ?? (() => undefined);
  const integrationTimeoutMs = opts.integrationTimeoutMs ?? DEFAULT_INTEGRATION_TIMEOUT_MS;

  async function handle(req: IncomingMessage, requestId: string): Promise<Handled> {
    const requestTimeEpoch = Date.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const fullPath = queryAt === -1 ? target : target.slice(0, queryAt);
    const rawQuery = queryAt === -1 ? '' : target.slice(queryAt + 1);

    const blocked = opts.firewall?.(req);
    if (blocked) return { reply: await answerEarly(req, blocked), route: null };

    const path = stripBasePath(fullPath, basePath);
    const routePath = path !== undefined && path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    if (routePath === '/health' || trimSlash(fullPath) === '/health') {
      if (method !== 'GET') return { reply: methodNotAllowed(['GET']), route: '/health' };
      return { reply: json(200, { status: 'ok' }), route: '/health' };
    }
    if (path === undefined || routePath === undefined || !routePath.startsWith('/'))
      return { reply: json(404, { error: 'Not Found' }), route: null };

    let decoded: string[];
    try {
      decoded = routePath
        .split('/')
        .slice(1)
        .map((s) => decodeURIComponent(s));
    } catch {
      const bad = routePath.split('/').find((s) => {
        try {
          decodeURIComponent(s);
          return false;
        } catch {
          return true;
        }
      });
      const shown = (bad ?? '').length > 80 ? `${(bad ?? '').slice(0, 80)}…` : (bad ?? '');
      return {
        reply: json(400, {
          error: ERRORS.BadRequest.message,
          detail: `the path segment "${shown}" is not percent-encoded UTF-8: each %XX must be a byte of a UTF-8 character`,
        }),
        route: null,
      };
    }
    const match = matchResource(resources, decoded);
    if (!match) return { reply: json(404, { error: 'Not Found' }), route: null };
    const route = match.resource.methods.get(method);
    if (!route) return { reply: methodNotAllowed([...match.resource.methods.keys()]), route: match.resource.path };
    const at = { route: route.path };

    const limits = { maxBodyBytes: opts.maxBodyBytes, inlineAssets: route.inlineAssets };
    const maxBody = bodyCeiling(limits);
    const body = await readBody(req, maxBody);
    if (body === 'too_large') {
      // API Gateway's own ceiling is 10 MB; here the gateway applies the configured limit, so it
      // says that one (the body is past the ceiling: readBody stopped there).
      const reply = json(413, { error: ERRORS.PayloadTooLarge.message, detail: bodySizeProblem(maxBody + 1, limits) });
      return { reply: await answerEarly(req, reply), ...at };
    }

    const parts = eventParts({ req, requestId, requestTimeEpoch, method, fullPath, path, routePath, rawQuery, match, route }, api);
    let authorizer: Record<string, unknown> | undefined;
    const policyAllows = () => opts.resourcePolicy?.(route.auth, parts.methodArn) ?? Promise.resolve(true);
    // The policy's explicit Deny is checked before the authorizer runs; for IAM, after the signature.
    if (route.auth !== 'owner' && !(await policyAllows()))
      return { reply: gateway('ACCESS_DENIED', requestId), ...at, cause: 'resource policy' };
    if (route.auth === 'apiKey') {
      const outcome = await authorize(authorizerEvent(parts));
      if (outcome.kind === 'unauthorized') return { reply: gateway('UNAUTHORIZED', requestId), ...at };
      if (outcome.kind === 'forbidden') return { reply: gateway('ACCESS_DENIED', requestId, undefined, outcome.context), ...at };
      if (outcome.kind === 'error') return { reply: gateway('AUTHORIZER_CONFIGURATION_ERROR', requestId), ...at, cause: outcome.cause };
      authorizer = outcome.context;
    } else if (route.auth === 'owner') {
      if (!ownerAllowed(req.headers.authorization)) {
        // The local stand-in for IAM's signature check: its own challenge, not a gateway response.
        const reply = json(401, unauthorizedBody('ownerToken'));
        reply.headers.push(['WWW-Authenticate', 'Bearer']);
        return { reply, ...at };
      }
      if (!(await policyAllows())) return { reply: gateway('ACCESS_DENIED', requestId), ...at, cause: 'resource policy' };
      authorizer = { principalId: 'owner' };
    }

    const event = proxyEvent(parts, body, req.headers['content-type'], authorizer);
    const handler = opts.handlers[route.handler];
    if (!handler) return { reply: gateway('DEFAULT_5XX', requestId), ...at, cause: `no handler ${route.handler}` };
    const context = createLambdaContext(route.handler);
    const timeoutMs = route.integrationTimeoutMs ?? integrationTimeoutMs;
    if (route.streams) {
      const invoke = opts.streamInvokers?.[route.handler] ?? ((e, c) => invokeStreamingInProcess(handler, e, c));
      try {
        // The time-out covers the wait for the metadata here; the body then flows until the
        // function ends it (its own time-out bounds that).
        const streamed = await withTimeout(
          Promise.resolve().then(async () => readStreamed(await invoke(event, context))),
          timeoutMs,
        );
        if (!streamed.ok)
          return {
            reply: gateway('DEFAULT_5XX', requestId, 502),
            ...at,
            cause: `Malformed streamed Lambda proxy response: ${streamed.reason}`,
          };
        return { reply: streamed.reply, body: streamed.body, ...at };
      } catch (err) {
        if (err instanceof IntegrationTimeout) return { reply: gateway('INTEGRATION_TIMEOUT', requestId), ...at, cause: err.message };
        // An invoke refused before the function ran (a throttle) is API Gateway's
        // INTEGRATION_FAILURE, as for a buffered method (lib/synth/runtime.ts).
        if ((err as { gatewayResponse?: unknown }).gatewayResponse === 'INTEGRATION_FAILURE')
          return { reply: gateway('INTEGRATION_FAILURE', requestId, 500), ...at, cause: describe(err) };
        const status = (err as { gatewayStatus?: unknown }).gatewayStatus;
        return { reply: gateway('DEFAULT_5XX', requestId, typeof status === 'number' ? status : 502), ...at, cause: describe(err) };
      }
    }
    let result: unknown;
    try {
      result = await withTimeout(
        Promise.resolve().then(() => invokeBufferedInProcess(handler, event, context)),
        timeoutMs,
      );
    } catch (err) {
      if (err instanceof IntegrationTimeout) return { reply: gateway('INTEGRATION_TIMEOUT', requestId), ...at, cause: err.message };
      // A failed function is a 502 that API Gateway renders with its DEFAULT_5XX response; a
      // failure to invoke it at all (no permission, payload over Lambda's limit) a 500.
      const status = (err as { gatewayStatus?: unknown }).gatewayStatus;
      return { reply: gateway('DEFAULT_5XX', requestId, typeof status === 'number' ? status : 502), ...at, cause: describe(err) };
    }
    const checked = checkProxyResult(result);
    if (!checked.ok)
      return { reply: gateway('DEFAULT_5XX', requestId, 502), ...at, cause: `Malformed Lambda proxy response: ${checked.reason}` };
    return { reply: checked.reply, ...at };
  }

  return (req, res) => {
    const started = performance.now();
    const requestId = randomUUID();
    const method = req.method ?? 'GET';
    handle(req, requestId)
      .catch((err: unknown): Handled => ({ reply: gateway('DEFAULT_5XX', requestId), route: null, cause: describe(err) }))
      .then(async ({ reply, route, cause, body }) => {
        if (body) {
          send(res, reply, requestId, true);
          // pipeline pulls only as fast as the client reads; a client that goes away ends the
          // function's stream too.
          await pipeline(body, res).catch(() => res.destroy());
        } else send(res, reply, requestId);
        log({
          method,
          // A path that carries a capability (an asset link's token) is logged as its template,
          // as API Gateway's access log does (`resourcePath`): a link in a log is a leaked link.
          path: route?.includes('{token}') ? route : (req.url ?? '/').split('?', 1)[0],
          route,
          status: reply.status,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          request_id: requestId,
          ...(cause === undefined ? {} : { cause }),
        });
      })
      .catch(() => undefined);
  };
}

/**
 * A reply given without the body: the rest of the body is read and dropped first, so the client,
 * still sending, gets the answer and not a reset (lib/local/drain.ts); when that cannot be done
 * (a body declared past the drain's bound, one that stopped arriving) the connection closes after
 * the answer.
 */
async function answerEarly(req: IncomingMessage, reply: Reply): Promise<Reply> {
  if (await drainRest(req)) return reply;
  return { ...reply, headers: [...reply.headers, ['Connection', 'close']] };
}

class IntegrationTimeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IntegrationTimeout(`Handler did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
