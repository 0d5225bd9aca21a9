import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { validateHeaderName, validateHeaderValue, type IncomingMessage, type ServerResponse } from 'node:http';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayEventRequestContextWithAuthorizer,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import * as v from 'valibot';
import type { Route } from '../routes';

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type RequestAuthorizer = (event: APIGatewayRequestAuthorizerEvent, context: Context) => Promise<APIGatewayAuthorizerResult>;
export type GatewayLog = (line: Record<string, unknown>) => void;

export interface GatewayOptions {
  routes: readonly Route[];
  /** Route `handler` name → the function its Lambda runs. */
  handlers: Record<string, ProxyHandler>;
  /** The REQUEST authorizer guarding `apiKey` routes. */
  authorizer: RequestAuthorizer;
  /** Bearer token for `owner` routes (IAM stands in for it on AWS). */
  ownerToken: string;
  maxBodyBytes: number;
  /** A prefix the API is served under, such as `/api`; the route table does not include it. */
  basePath?: string;
  log?: GatewayLog;
  /** API Gateway's integration time-out (default 29 s): a slower handler is answered with 504. */
  integrationTimeoutMs?: number;
}

const REGION = 'local';
const ACCOUNT = '000000000000';
const API_ID = 'local';
const STAGE = 'local';
const DEFAULT_INTEGRATION_TIMEOUT_MS = 29_000;
const LAMBDA_TIMEOUT_MS = 30_000;

/** A Lambda context object like the Node.js runtime's, for one invocation. */
export function createLambdaContext(functionName: string, timeoutMs: number = LAMBDA_TIMEOUT_MS): Context {
  const deadline = Date.now() + timeoutMs;
  const requestId = randomUUID();
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${day}/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

type Segment = { literal: string } | { param: string };

interface Resource {
  path: string;
  segments: Segment[];
  methods: Map<string, Route>;
  resourceId: string;
}

interface Reply {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

/**
 * API Gateway (REST API, Lambda proxy integration) on one machine: matches the route table,
 * builds the proxy event, runs the REQUEST authorizer and evaluates its IAM policy, stands in
 * a bearer token for IAM on owner routes, and checks handler responses as strictly as API
 * Gateway, so a handler that works here works there.
 */
export function createGateway(opts: GatewayOptions): (req: IncomingMessage, res: ServerResponse) => void {
  if (opts.ownerToken.length === 0) throw new Error('The owner token must not be empty');
  const basePath = normaliseBasePath(opts.basePath);
  const resources = compileRoutes(opts.routes, opts.handlers);
  const ownerDigest = sha256(opts.ownerToken);
  const log = opts.log ?? (() => undefined);
  const integrationTimeoutMs = opts.integrationTimeoutMs ?? DEFAULT_INTEGRATION_TIMEOUT_MS;

  async function handle(req: IncomingMessage, requestId: string): Promise<{ reply: Reply; route: string | null; cause?: string }> {
    const requestTimeEpoch = Date.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const fullPath = queryAt === -1 ? target : target.slice(0, queryAt);
    const rawQuery = queryAt === -1 ? '' : target.slice(queryAt + 1);

    const path = stripBasePath(fullPath, basePath);
    const routePath = path !== undefined && path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    if (routePath === '/health' || trimSlash(fullPath) === '/health') {
      if (method !== 'GET') return { reply: methodNotAllowed(['GET']), route: '/health' };
      return { reply: json(200, { status: 'ok' }), route: '/health' };
    }
    if (path === undefined || routePath === undefined || !routePath.startsWith('/')) return { reply: json(404, { error: 'Not Found' }), route: null };

    let decoded: string[];
    try {
      decoded = routePath
        .split('/')
        .slice(1)
        .map((s) => decodeURIComponent(s));
    } catch {
      return { reply: json(400, { error: 'Bad Request' }), route: null };
    }
    const match = matchResource(resources, decoded);
    if (!match) return { reply: json(404, { error: 'Not Found' }), route: null };
    const route = match.resource.methods.get(method);
    if (!route) return { reply: methodNotAllowed([...match.resource.methods.keys()]), route: match.resource.path };

    const body = await readBody(req, opts.maxBodyBytes);
    if (body === 'too_large') {
      // Answer now and let the connection close: the rest of the upload is never read.
      req.pause();
      const reply = json(413, { error: 'Payload Too Large' });
      reply.headers.push(['Connection', 'close']);
      return { reply, route: route.path };
    }

    const { headers, multiValueHeaders } = readHeaders(req);
    const { single: queryStringParameters, multi: multiValueQueryStringParameters } = parseQuery(rawQuery);
    const host = req.headers.host ?? 'localhost';
    const requestContext: APIGatewayEventRequestContextWithAuthorizer<undefined> = {
      accountId: ACCOUNT,
      apiId: API_ID,
      authorizer: undefined,
      // The Host header as received, port included, so handlers can build this server's URLs.
      domainName: host,
      domainPrefix: host.split('.')[0]?.split(':')[0] ?? host,
      extendedRequestId: requestId,
      httpMethod: method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: sourceIp(req),
        user: null,
        userAgent: req.headers['user-agent'] ?? null,
        userArn: null,
      },
      path: fullPath,
      protocol: `HTTP/${req.httpVersion}`,
      requestId,
      requestTime: clfTime(requestTimeEpoch),
      requestTimeEpoch,
      resourceId: match.resource.resourceId,
      resourcePath: route.path,
      stage: STAGE,
    };
    const common = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters,
      multiValueQueryStringParameters,
      pathParameters: Object.keys(match.params).length > 0 ? match.params : null,
      stageVariables: null,
    };

    let authorizer: Record<string, unknown>;
    if (route.auth === 'apiKey') {
      const methodArn = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${API_ID}/${STAGE}/${method}/${routePath.slice(1)}`;
      const outcome = await authorize(opts.authorizer, { type: 'REQUEST', methodArn, ...common, requestContext }, methodArn);
      if (outcome.kind === 'unauthorized') {
        const reply = json(401, { error: 'Unauthorized' });
        reply.headers.push(['WWW-Authenticate', 'Api-Key']);
        return { reply, route: route.path };
      }
      if (outcome.kind === 'forbidden') return { reply: json(403, { error: 'Forbidden' }), route: route.path };
      if (outcome.kind === 'error') return { reply: internalError(requestId), route: route.path, cause: outcome.cause };
      if (outcome.kind === 'failed') {
        const reply = json(503, { error: 'Service Unavailable', request_id: requestId });
        reply.headers.push(['Retry-After', '1']);
        return { reply, route: route.path, cause: outcome.cause };
      }
      authorizer = outcome.context;
    } else if (route.auth === 'owner') {
      if (!ownerTokenMatches(req.headers.authorization, ownerDigest)) {
        const reply = json(401, { error: 'Unauthorized' });
        reply.headers.push(['WWW-Authenticate', 'Bearer']);
        return { reply, route: route.path };
      }
      authorizer = { principalId: 'owner' };
    } else {
      authorizer = {};
    }

    const textual = isTextual(req.headers['content-type']);
    const event: APIGatewayProxyEvent = {
      ...common,
      body: body.length === 0 ? null : textual ? body.toString('utf8') : body.toString('base64'),
      isBase64Encoded: body.length > 0 && !textual,
      requestContext: { ...requestContext, authorizer: route.auth === 'none' ? undefined : authorizer },
    };

    const handler = opts.handlers[route.handler];
    if (!handler) return { reply: internalError(requestId), route: route.path, cause: `no handler ${route.handler}` };
    let result: unknown;
    try {
      result = await withTimeout(
        Promise.resolve().then(() => handler(event, createLambdaContext(route.handler))),
        integrationTimeoutMs,
      );
    } catch (err) {
      if (err instanceof IntegrationTimeout) {
        return { reply: json(504, { error: 'Gateway Timeout', request_id: requestId }), route: route.path, cause: err.message };
      }
      return { reply: json(502, { error: 'Internal Error', request_id: requestId }), route: route.path, cause: describe(err) };
    }
    const checked = checkProxyResult(result);
    if (!checked.ok) {
      return { reply: json(502, { error: 'Internal Error', request_id: requestId }), route: route.path, cause: `Malformed Lambda proxy response: ${checked.reason}` };
    }
    return { reply: checked.reply, route: route.path };
  }

  return (req, res) => {
    const started = performance.now();
    const requestId = randomUUID();
    const method = req.method ?? 'GET';
    handle(req, requestId)
      .catch((err: unknown) => ({ reply: internalError(requestId), route: null, cause: describe(err) }))
      .then(({ reply, route, cause }) => {
        send(res, reply, requestId);
        log({
          method,
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

function send(res: ServerResponse, reply: Reply, requestId: string): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = reply.status;
  const grouped = new Map<string, { name: string; values: string[] }>();
  for (const [name, value] of reply.headers) {
    const key = name.toLowerCase();
    const entry = grouped.get(key) ?? { name, values: [] };
    entry.values.push(value);
    grouped.set(key, entry);
  }
  // A proxy response without a content type reaches the client as JSON on REST APIs.
  if (!grouped.has('content-type')) grouped.set('content-type', { name: 'Content-Type', values: ['application/json'] });
  grouped.set('x-request-id', { name: 'x-request-id', values: [requestId] });
  for (const { name, values } of grouped.values()) res.setHeader(name, values.length === 1 ? (values[0] ?? '') : values);
  const bodyless = reply.status === 204 || reply.status === 304 || (reply.status >= 100 && reply.status < 200);
  res.end(bodyless ? undefined : reply.body);
}

function json(status: number, body: Record<string, unknown>): Reply {
  return { status, headers: [['Content-Type', 'application/json']], body: Buffer.from(JSON.stringify(body)) };
}

function internalError(requestId: string): Reply {
  return json(500, { error: 'Internal Error', request_id: requestId });
}

function methodNotAllowed(methods: string[]): Reply {
  const reply = json(405, { error: 'Method Not Allowed' });
  reply.headers.push(['Allow', [...methods].sort().join(', ')]);
  return reply;
}

// ---------------------------------------------------------------------------------------------
// Routing

function compileRoutes(routes: readonly Route[], handlers: Record<string, ProxyHandler>): Resource[] {
  const byPath = new Map<string, Resource>();
  for (const route of routes) {
    if (!Object.hasOwn(handlers, route.handler)) throw new Error(`No handler for route ${route.method} ${route.path} (${route.handler})`);
    const path = trimSlash(route.path);
    let resource = byPath.get(path);
    if (!resource) {
      const segments: Segment[] = path
        .split('/')
        .slice(1)
        .map((s) => {
          const param = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(s)?.[1];
          if (param) return { param };
          if (s.includes('{') || s.includes('}') || s === '') throw new Error(`Unsupported route path ${route.path}`);
          return { literal: s };
        });
      resource = { path, segments, methods: new Map(), resourceId: sha256(path).toString('hex').slice(0, 6) };
      byPath.set(path, resource);
    }
    if (resource.methods.has(route.method)) throw new Error(`Duplicate route ${route.method} ${route.path}`);
    resource.methods.set(route.method, route);
  }
  return [...byPath.values()];
}

/** The matching resource whose first differing segment is a literal wins over a parameter. */
function matchResource(resources: Resource[], segments: string[]): { resource: Resource; params: Record<string, string> } | undefined {
  let best: { resource: Resource; params: Record<string, string> } | undefined;
  for (const resource of resources) {
    if (resource.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    resource.segments.forEach((seg, i) => {
      const actual = segments[i] ?? '';
      if ('literal' in seg) matches &&= seg.literal === actual;
      else if (actual === '') matches = false;
      else params[seg.param] = actual;
    });
    if (matches && (!best || moreSpecific(resource, best.resource))) best = { resource, params };
  }
  return best;
}

function moreSpecific(a: Resource, b: Resource): boolean {
  for (let i = 0; i < a.segments.length; i += 1) {
    const x = a.segments[i];
    const y = b.segments[i];
    if (!x || !y) break;
    const xl = 'literal' in x;
    const yl = 'literal' in y;
    if (xl !== yl) return xl;
  }
  return false;
}

function normaliseBasePath(basePath: string | undefined): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return '';
  const withSlash = basePath.startsWith('/') ? basePath : `/${basePath}`;
  return trimSlash(withSlash);
}

function stripBasePath(path: string, basePath: string): string | undefined {
  if (basePath === '') return path;
  if (path === basePath) return '/';
  if (path.startsWith(`${basePath}/`)) return path.slice(basePath.length);
  return undefined;
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

// ---------------------------------------------------------------------------------------------
// Request parts

/**
 * Reads the body up to `limit` bytes. A larger declared length is refused before reading; a
 * stream that grows past the limit is abandoned at that point, so no more than limit + one
 * chunk is ever held.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.resolve('too_large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (outcome: Buffer | 'too_large' | Error): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) finish('too_large');
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(Buffer.concat(chunks));
    const onError = (err: Error): void => finish(err);
    const onClose = (): void => finish(new Error('The client closed the connection before sending the whole body'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Headers as received, in their original case; `headers` keeps the last of repeated ones. */
function readHeaders(req: IncomingMessage): { headers: Record<string, string>; multiValueHeaders: Record<string, string[]> } {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? '';
    const value = req.rawHeaders[i + 1] ?? '';
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  // API Gateway adds these for the integration; handlers build absolute URLs from them. A
  // proxy in front of the local runtime may already have set them, and then they are kept.
  const has = (n: string) => Object.keys(headers).some((k) => k.toLowerCase() === n);
  const add = (n: string, v: string) => {
    if (has(n.toLowerCase())) return;
    headers[n] = v;
    multiValueHeaders[n] = [v];
  };
  add('X-Forwarded-Proto', 'encrypted' in req.socket ? 'https' : 'http');
  add('X-Forwarded-Port', String(req.socket.localPort ?? ''));
  add('X-Forwarded-For', req.socket.remoteAddress ?? '');
  return { headers, multiValueHeaders };
}

function parseQuery(raw: string): { single: Record<string, string> | null; multi: Record<string, string[]> | null } {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decodeLoosely(eq === -1 ? part : part.slice(0, eq));
    const value = eq === -1 ? '' : decodeLoosely(part.slice(eq + 1));
    single[name] = value;
    (multi[name] ??= []).push(value);
  }
  return Object.keys(single).length === 0 ? { single: null, multi: null } : { single, multi };
}

function decodeLoosely(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const TEXT_TYPES = new Set([
  'application/json',
  'application/xml',
  'application/x-www-form-urlencoded',
  'application/javascript',
  'application/x-yaml',
  'application/yaml',
  'application/graphql',
]);

/** Bodies of these types reach the handler as text; anything else as base64. */
function isTextual(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return type.startsWith('text/') || TEXT_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml');
}

function sourceIp(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? '127.0.0.1';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** API Gateway's requestTime: `09/Apr/2015:12:34:56 +0000`. */
function clfTime(epochMs: number): string {
  const d = new Date(epochMs);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

// ---------------------------------------------------------------------------------------------
// Authorization

const ContextValue = v.union([v.string(), v.number(), v.boolean(), v.null(), v.undefined()]);
const StringOrList = v.union([v.string(), v.array(v.string())]);
const AuthorizerResult = v.object({
  principalId: v.string(),
  policyDocument: v.object({
    Version: v.optional(v.string()),
    Statement: v.array(
      v.looseObject({
        Effect: v.picklist(['Allow', 'Deny']),
        Action: v.optional(StringOrList),
        Resource: v.optional(StringOrList),
      }),
    ),
  }),
  context: v.optional(v.nullable(v.record(v.string(), ContextValue))),
  usageIdentifierKey: v.optional(v.nullable(v.string())),
});

type AuthOutcome =
  | { kind: 'allow'; context: Record<string, unknown> }
  | { kind: 'forbidden' }
  | { kind: 'unauthorized' }
  | { kind: 'error'; cause: string }
  | { kind: 'failed'; cause: string };

async function authorize(authorizer: RequestAuthorizer, event: APIGatewayRequestAuthorizerEvent, methodArn: string): Promise<AuthOutcome> {
  const started = performance.now();
  let raw: unknown;
  try {
    raw = await authorizer(event, createLambdaContext('authorizer'));
  } catch (err) {
    // The one error message API Gateway turns into 401 rather than 500.
    if (err instanceof Error && err.message === 'Unauthorized') return { kind: 'unauthorized' };
    // API Gateway's AUTHORIZER_FAILURE, which the AWS stack answers 503 + Retry-After: the
    // authorizer could not decide (its store was unreachable, say), so a retry may succeed.
    return { kind: 'failed', cause: `authorizer failed: ${describe(err)}` };
  }
  // An answer API Gateway cannot use (objects or arrays in `context`, no policy) is its
  // AuthorizerConfigurationException, a 500.
  const parsed = v.safeParse(AuthorizerResult, raw);
  if (!parsed.success) return { kind: 'error', cause: `authorizer returned an unusable result: ${v.summarize(parsed.issues)}` };
  const statements = parsed.output.policyDocument.Statement.filter(
    (s) => anyMatches(s.Action, 'execute-api:Invoke', true) && anyMatches(s.Resource, methodArn, false),
  );
  if (statements.some((s) => s.Effect === 'Deny') || !statements.some((s) => s.Effect === 'Allow')) return { kind: 'forbidden' };
  // REST APIs hand the integration every context value as a string.
  const context: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parsed.output.context ?? {})) {
    if (value === undefined) continue;
    context[key] = value === null ? null : String(value);
  }
  context.principalId = parsed.output.principalId;
  context.integrationLatency = Math.round(performance.now() - started);
  return { kind: 'allow', context };
}

function anyMatches(patterns: string | string[] | undefined, value: string, ignoreCase: boolean): boolean {
  if (patterns === undefined) return false;
  return (Array.isArray(patterns) ? patterns : [patterns]).some((p) => wildcardMatch(p, value, ignoreCase));
}

/** IAM wildcards: `*` any run of characters, `?` any one character. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*').replaceAll('?', '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'is' : 's').test(value);
}

function ownerTokenMatches(header: string | undefined, expected: Buffer): boolean {
  const presented = header === undefined ? undefined : /^Bearer +(\S+) *$/i.exec(header)?.[1];
  // Hashing first gives equal lengths, so the comparison time says nothing about the token.
  const equal = timingSafeEqual(sha256(presented ?? ''), expected);
  return presented !== undefined && equal;
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

// ---------------------------------------------------------------------------------------------
// Responses

const RESULT_KEYS = new Set(['statusCode', 'headers', 'multiValueHeaders', 'body', 'isBase64Encoded']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

type HeaderValue = string | number | boolean;
const isHeaderValue = (x: unknown): x is HeaderValue => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean';

/** The checks behind API Gateway's "Malformed Lambda proxy response" (a 502). */
function checkProxyResult(result: unknown): { ok: true; reply: Reply } | { ok: false; reason: string } {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return { ok: false, reason: 'not an object' };
  const r = result as Record<string, unknown>;
  const extra = Object.keys(r).filter((k) => !RESULT_KEYS.has(k));
  if (extra.length > 0) return { ok: false, reason: `unexpected field(s) ${extra.join(', ')}` };
  const { statusCode, headers, multiValueHeaders, body, isBase64Encoded } = r;
  if (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
    return { ok: false, reason: 'statusCode must be an integer from 100 to 599' };
  }
  if (body !== undefined && typeof body !== 'string') return { ok: false, reason: 'body must be a string' };
  if (isBase64Encoded !== undefined && typeof isBase64Encoded !== 'boolean') return { ok: false, reason: 'isBase64Encoded must be a boolean' };

  const single: Array<[string, string]> = [];
  if (headers !== undefined) {
    if (!isPlainObject(headers)) return { ok: false, reason: 'headers must be an object' };
    for (const [name, value] of Object.entries(headers)) {
      if (!isHeaderValue(value)) return { ok: false, reason: `header ${name} must be a string, number or boolean` };
      single.push([name, String(value)]);
    }
  }
  const multi: Array<[string, string]> = [];
  if (multiValueHeaders !== undefined) {
    if (!isPlainObject(multiValueHeaders)) return { ok: false, reason: 'multiValueHeaders must be an object' };
    for (const [name, values] of Object.entries(multiValueHeaders)) {
      if (!Array.isArray(values) || !values.every(isHeaderValue)) return { ok: false, reason: `multiValueHeaders ${name} must be a list of strings` };
      for (const value of values) multi.push([name, String(value)]);
    }
  }
  // Where both name a header, multiValueHeaders wins, as on API Gateway.
  const multiNames = new Set(multi.map(([n]) => n.toLowerCase()));
  const all = [...single.filter(([n]) => !multiNames.has(n.toLowerCase())), ...multi];
  for (const [name, value] of all) {
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      return { ok: false, reason: `header ${JSON.stringify(name)} is not a valid HTTP header` };
    }
  }

  const text = body ?? '';
  if (isBase64Encoded === true && !BASE64.test(text)) return { ok: false, reason: 'body is not base64' };
  return {
    ok: true,
    reply: { status: statusCode, headers: all, body: isBase64Encoded === true ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8') },
  };
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

class IntegrationTimeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IntegrationTimeout(`Handler did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
