/**
 * What the gateway sends: a handler's checked proxy result, or one of API Gateway's own
 * answers rendered from the Gateway Responses the API declares (lib/gateway-responses.ts for
 * `npm start`, the template's AWS::ApiGateway::GatewayResponse resources in the synthesized mode).
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_TYPE_STATUS, type GatewayResponse, type ResponseType } from '../../gateway-responses';

export interface Reply {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

/** API Gateway's $context.error.message for the types the gateway answers by itself. */
const MESSAGES: Partial<Record<ResponseType, string>> = {
  UNAUTHORIZED: 'Unauthorized',
  ACCESS_DENIED: 'User is not authorized to access this resource',
  AUTHORIZER_FAILURE: 'Authorizer failed',
  AUTHORIZER_CONFIGURATION_ERROR: 'Authorizer configuration error',
  MISSING_AUTHENTICATION_TOKEN: 'Missing Authentication Token',
  REQUEST_TOO_LARGE: 'Request Too Long',
  INTEGRATION_TIMEOUT: 'Endpoint request timed out',
  INTEGRATION_FAILURE: 'Internal server error',
};

/**
 * `authorizer` is the context a Lambda authorizer returned, as `$context.authorizer.<key>`
 * reads it (also on a Deny); a key it did not return renders empty, as on AWS.
 */
export type GatewayReplies = (
  type: ResponseType,
  requestId: string,
  status?: number,
  authorizer?: Readonly<Record<string, unknown>>,
) => Reply;

/**
 * Renders API Gateway's answer of a type: its own Gateway Response if declared, else
 * DEFAULT_4XX / DEFAULT_5XX by the type's status class, else API Gateway's built-in body.
 * `status` stands for answers whose status API Gateway sets by case (a failed Lambda's 502).
 */
export function gatewayReplies(responses: readonly GatewayResponse[]): GatewayReplies {
  const byType = new Map<string, GatewayResponse>();
  for (const r of responses) {
    if (byType.has(r.type)) throw new Error(`Gateway response ${r.type} declared twice`);
    for (const [name, value] of Object.entries(r.headers ?? {})) literalHeader(name, value);
    byType.set(r.type, r);
  }
  return (type, requestId, status, authorizer) => {
    const own = byType.get(type);
    const natural = status ?? RESPONSE_TYPE_STATUS[type];
    const response = own ?? byType.get(natural >= 500 ? 'DEFAULT_5XX' : 'DEFAULT_4XX');
    const code = own?.statusCode !== undefined ? Number(own.statusCode) : natural;
    const message = MESSAGES[type] ?? (code >= 500 ? 'Internal server error' : 'Bad request');
    const template = response?.body ?? '{"message":$context.error.messageString}';
    const body = template.replace(
      /\$context\.(requestId|error\.messageString|error\.message|error\.responseType|authorizer\.[A-Za-z0-9_]+)\b/g,
      (_, name: string) => {
        if (name === 'requestId') return requestId;
        if (name.startsWith('authorizer.')) {
          const value = authorizer?.[name.slice('authorizer.'.length)];
          return value === undefined || value === null ? '' : String(value);
        }
        if (name === 'error.messageString') return JSON.stringify(message);
        if (name === 'error.message') return message;
        return type;
      },
    );
    const headers: Array<[string, string]> = [['Content-Type', 'application/json']];
    for (const [name, value] of Object.entries(response?.headers ?? {})) headers.push([name, literalHeader(name, value)]);
    return { status: code, headers, body: Buffer.from(body) };
  };
}

/** Only literal header values ('…') are rendered; anything else must fail loudly, not silently. */
function literalHeader(name: string, value: string): string {
  const m = /^'(.*)'$/s.exec(value);
  if (!m) throw new Error(`Gateway response header ${name}: only literal values ('…') are supported locally, got ${value}`);
  return m[1] ?? '';
}

export function json(status: number, body: Record<string, unknown>): Reply {
  return { status, headers: [['Content-Type', 'application/json']], body: Buffer.from(JSON.stringify(body)) };
}

export function methodNotAllowed(methods: string[]): Reply {
  const reply = json(405, { error: 'Method Not Allowed' });
  reply.headers.push(['Allow', [...methods].sort().join(', ')]);
  return reply;
}

/** Sends the reply; with `headOnly`, its status and headers only (a streamed body follows). */
export function send(res: ServerResponse, reply: Reply, requestId: string, headOnly = false): void {
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
  if (headOnly) {
    res.flushHeaders();
    return;
  }
  const bodyless = reply.status === 204 || reply.status === 304 || (reply.status >= 100 && reply.status < 200);
  res.end(bodyless ? undefined : reply.body);
}
