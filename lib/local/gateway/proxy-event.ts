/**
 * The API Gateway REST proxy event (and the REQUEST authorizer's event) built from an HTTP
 * request, field for field as a Lambda receives them behind API Gateway.
 */
import type { IncomingMessage } from 'node:http';
import type { APIGatewayEventRequestContextWithAuthorizer, APIGatewayProxyEvent, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import type { GatewayRoute, Match } from './routing';

export const STAGE = 'local';
export const API_ID = 'local';

export interface ApiIdentity {
  region: string;
  account: string;
  apiId: string;
  stage: string;
}

/** The parts the proxy event and the authorizer event share. */
export interface EventParts {
  common: Omit<APIGatewayProxyEvent, 'body' | 'isBase64Encoded' | 'requestContext'>;
  requestContext: APIGatewayEventRequestContextWithAuthorizer<undefined>;
  methodArn: string;
}

export interface IncomingCall {
  req: IncomingMessage;
  requestId: string;
  requestTimeEpoch: number;
  method: string;
  /** The path as received, base path included. */
  fullPath: string;
  /** The path under the base path. */
  path: string;
  /** `path` without its trailing slash: what the route matched. */
  routePath: string;
  rawQuery: string;
  match: Match;
  route: GatewayRoute;
}

export function eventParts(call: IncomingCall, api: ApiIdentity): EventParts {
  const { req, requestId, requestTimeEpoch, method, fullPath, path, routePath, rawQuery, match, route } = call;
  const { headers, multiValueHeaders } = readHeaders(req);
  const { single: queryStringParameters, multi: multiValueQueryStringParameters } = parseQuery(rawQuery);
  const host = req.headers.host ?? 'localhost';
  const requestContext: APIGatewayEventRequestContextWithAuthorizer<undefined> = {
    accountId: api.account,
    apiId: api.apiId,
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
    stage: api.stage,
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
  const methodArn = `arn:aws:execute-api:${api.region}:${api.account}:${api.apiId}/${api.stage}/${method}/${routePath.slice(1)}`;
  return { common, requestContext, methodArn };
}

export function authorizerEvent(parts: EventParts): APIGatewayRequestAuthorizerEvent {
  return { type: 'REQUEST', methodArn: parts.methodArn, ...parts.common, requestContext: parts.requestContext };
}

export function proxyEvent(
  parts: EventParts,
  body: Buffer,
  contentType: string | undefined,
  authorizer: Record<string, unknown> | undefined,
): APIGatewayProxyEvent {
  const textual = isTextual(contentType);
  return {
    ...parts.common,
    body: body.length === 0 ? null : textual ? body.toString('utf8') : body.toString('base64'),
    isBase64Encoded: body.length > 0 && !textual,
    requestContext: { ...parts.requestContext, authorizer },
  };
}

/**
 * Reads the body up to `limit` bytes. A larger declared length is refused before reading; a
 * stream that grows past the limit is abandoned at that point, so no more than limit + one
 * chunk is ever held.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
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
