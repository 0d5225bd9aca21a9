/**
 * The answers API Gateway gives by itself (its Gateway Responses), in the contract's error shape. The
 * service stack declares them and the local gateway renders them, so both answer alike
 * (test/stack/service-stack.test.ts checks the synthesized template against this table).
 * Plain data: imports nothing from aws-cdk-lib.
 */
import { bodyLimitDetail } from '../functions/core/body-size';
import { ERRORS, unauthorizedBody } from '../functions/core/errors';

/** API Gateway REST refuses larger bodies itself (10 MB). */
export const API_GATEWAY_MAX_BODY_BYTES = 10 * 1_048_576;

/** API Gateway's response types, with the status each answers when none is configured. */
export const RESPONSE_TYPE_STATUS = {
  ACCESS_DENIED: 403,
  API_CONFIGURATION_ERROR: 500,
  AUTHORIZER_CONFIGURATION_ERROR: 500,
  AUTHORIZER_FAILURE: 500,
  BAD_REQUEST_PARAMETERS: 400,
  BAD_REQUEST_BODY: 400,
  EXPIRED_TOKEN: 403,
  INTEGRATION_FAILURE: 504,
  INTEGRATION_TIMEOUT: 504,
  INVALID_API_KEY: 403,
  INVALID_SIGNATURE: 403,
  MISSING_AUTHENTICATION_TOKEN: 403,
  QUOTA_EXCEEDED: 429,
  REQUEST_TOO_LARGE: 413,
  RESOURCE_NOT_FOUND: 404,
  THROTTLED: 429,
  UNAUTHORIZED: 401,
  UNSUPPORTED_MEDIA_TYPE: 415,
  WAF_FILTERED: 403,
  DEFAULT_4XX: 400,
  DEFAULT_5XX: 500,
} as const;

export type ResponseType = keyof typeof RESPONSE_TYPE_STATUS;

export interface GatewayResponse {
  type: ResponseType;
  /** Overrides the type's own status. */
  statusCode?: string;
  /** The application/json mapping template. */
  body: string;
  /** Header name → API Gateway value expression; a literal is in single quotes. */
  headers?: Readonly<Record<string, string>>;
}

export const GATEWAY_RESPONSES: readonly GatewayResponse[] = [
  // The detail names the accepted forms only, never which part of a key was wrong.
  {
    type: 'UNAUTHORIZED',
    statusCode: '401',
    body: JSON.stringify(unauthorizedBody('apiKey')),
    headers: { 'WWW-Authenticate': "'Api-Key'" },
  },
  // The authorizer refuses a key with a Deny whose context says why (functions/core/errors.ts
  // KEY_REFUSALS): API Gateway's UNAUTHORIZED cannot see an authorizer's context, ACCESS_DENIED
  // can. The values are plain strings without quotes or backslashes, safe inside a JSON string.
  // AWS also answers ACCESS_DENIED to an owner whose IAM identity may not call the route; there
  // both fields are empty.
  {
    type: 'ACCESS_DENIED',
    statusCode: '401',
    body: '{"error":"Unauthorized","reason":"$context.authorizer.reason","detail":"$context.authorizer.detail"}',
    headers: { 'WWW-Authenticate': "'Api-Key'" },
  },
  // A Lambda authorizer that throws (its store was unreachable, say) is, to API Gateway, an
  // AUTHORIZER_CONFIGURATION_ERROR (a bare 500 by default): it could not decide, so retry.
  // AUTHORIZER_FAILURE gets the same answer for whatever else keeps it from deciding.
  {
    type: 'AUTHORIZER_CONFIGURATION_ERROR',
    statusCode: '503',
    body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
    headers: { 'Retry-After': "'1'" },
  },
  {
    type: 'AUTHORIZER_FAILURE',
    statusCode: '503',
    body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
    headers: { 'Retry-After': "'1'" },
  },
  // The stage's throttle: a token bucket that refills every second.
  { type: 'THROTTLED', statusCode: '429', body: '{"error":"Too Many Requests"}', headers: { 'Retry-After': "'1'" } },
  // What API Gateway answers when it could not invoke the function, a Lambda throttled at its
  // reserved concurrency above all (a bare 500 by default, indistinguishable from a bug): the
  // function never ran, so the request may simply be sent again.
  {
    type: 'INTEGRATION_FAILURE',
    statusCode: '503',
    body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
    headers: { 'Retry-After': "'1'" },
  },
  // API Gateway says "Missing Authentication Token" both for an IAM route called without a
  // signature and for a path it has no route for. Unknown paths are caught first by the root
  // {proxy+} mock (404), so what is left here is an unsigned owner request: the contract's 401.
  {
    type: 'MISSING_AUTHENTICATION_TOKEN',
    statusCode: '401',
    body: JSON.stringify(unauthorizedBody('ownerSigV4')),
    headers: { 'WWW-Authenticate': "'AWS4-HMAC-SHA256'" },
  },
  // API Gateway's own ceiling; below it the handlers apply the configured limit, saying so too.
  {
    type: 'REQUEST_TOO_LARGE',
    statusCode: '413',
    body: JSON.stringify({ error: ERRORS.PayloadTooLarge.message, detail: bodyLimitDetail(API_GATEWAY_MAX_BODY_BYTES) }),
  },
  // messageString is the message already quoted and escaped for JSON.
  { type: 'DEFAULT_4XX', body: '{"error":$context.error.messageString}' },
  { type: 'DEFAULT_5XX', body: '{"error":"Internal Error","request_id":"$context.requestId"}' },
];

/**
 * Reads an AWS::ApiGateway::GatewayResponse's properties back into the shape above: how the
 * synthesized mode serves the responses a template declares, and how the stack test compares
 * the template with this table.
 */
export function gatewayResponseFromTemplate(properties: Record<string, unknown>): GatewayResponse {
  const type = properties.ResponseType;
  if (typeof type !== 'string' || !Object.hasOwn(RESPONSE_TYPE_STATUS, type))
    throw new Error(`Unknown gateway response type ${String(type)}`);
  const templates = (properties.ResponseTemplates ?? {}) as Record<string, unknown>;
  const body = templates['application/json'];
  const parameters = (properties.ResponseParameters ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(parameters)) {
    const name = /^gatewayresponse\.header\.(.+)$/.exec(key)?.[1];
    if (!name || typeof value !== 'string') throw new Error(`Unsupported gateway response parameter ${key}`);
    headers[name] = value;
  }
  return {
    type: type as ResponseType,
    ...(properties.StatusCode === undefined ? {} : { statusCode: String(properties.StatusCode) }),
    body: typeof body === 'string' ? body : '',
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
  };
}
