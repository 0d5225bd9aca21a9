/**
 * API Gateway's side of a Lambda REQUEST authorizer: the identity-source check, the result
 * cache, the strict reading of what the authorizer returns, and the evaluation of its policy
 * against the method ARN. Also the owner bearer token that stands in for IAM locally.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';
import * as v from 'valibot';
import { createLambdaContext } from '../lambda-context';

export type RequestAuthorizer = (event: APIGatewayRequestAuthorizerEvent, context: Context) => Promise<APIGatewayAuthorizerResult>;

/** How the API declares its authorizer (AWS::ApiGateway::Authorizer). */
export interface AuthorizerSettings {
  /** `method.request.header.X` / `method.request.querystring.x`; none means every request reaches it. */
  identitySources: readonly string[];
  /** AuthorizerResultTtlInSeconds; a cache needs identity sources. */
  ttlSeconds: number;
}

export const UNCACHED: AuthorizerSettings = { identitySources: [], ttlSeconds: 0 };

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
type AuthorizerResult = v.InferOutput<typeof AuthorizerResult>;

export type AuthOutcome =
  | { kind: 'allow'; context: Record<string, unknown> }
  /** A Deny (or no Allow); `context` is what the authorizer returned, for the gateway response. */
  | { kind: 'forbidden'; context: Record<string, unknown> }
  | { kind: 'unauthorized' }
  /** API Gateway's AuthorizerConfigurationException: the authorizer failed or answered nonsense. */
  | { kind: 'error'; cause: string };

export type Authorize = (event: APIGatewayRequestAuthorizerEvent) => Promise<AuthOutcome>;

/** The gateway's use of one authorizer: what it calls, when it calls, what it caches. */
export function createAuthorize(authorizer: RequestAuthorizer, settings: AuthorizerSettings = UNCACHED): Authorize {
  const sources = settings.identitySources.map(parseIdentitySource);
  const cache = new Map<string, { result: AuthorizerResult; expires: number }>();
  return async (event) => {
    const values = sources.map((read) => read(event));
    // API Gateway answers 401 itself, without calling the authorizer, when a source is missing.
    if (values.some((x) => x === undefined || x === '')) return { kind: 'unauthorized' };
    const key = JSON.stringify(values);
    const cacheable = settings.ttlSeconds > 0 && sources.length > 0;
    const cached = cacheable ? cache.get(key) : undefined;
    const started = performance.now();
    let result: AuthorizerResult;
    if (cached && cached.expires > Date.now()) result = cached.result;
    else {
      const called = await callAuthorizer(authorizer, event);
      if (!('result' in called)) return called;
      result = called.result;
      if (cacheable) cache.set(key, { result, expires: Date.now() + settings.ttlSeconds * 1000 });
    }
    return evaluate(result, event.methodArn, Math.round(performance.now() - started));
  };
}

async function callAuthorizer(
  authorizer: RequestAuthorizer,
  event: APIGatewayRequestAuthorizerEvent,
): Promise<AuthOutcome | { result: AuthorizerResult }> {
  let raw: unknown;
  try {
    raw = await authorizer(event, createLambdaContext('authorizer'));
  } catch (err) {
    // The one error message API Gateway turns into 401 rather than 500.
    if (err instanceof Error && err.message === 'Unauthorized') return { kind: 'unauthorized' };
    // Any other failure of the function is API Gateway's AuthorizerConfigurationException
    // (AUTHORIZER_CONFIGURATION_ERROR, not AUTHORIZER_FAILURE), which the stack answers 503 +
    // Retry-After: the authorizer could not decide (its store was unreachable, say).
    return { kind: 'error', cause: `authorizer failed: ${describe(err)}` };
  }
  // An answer API Gateway cannot use (objects or arrays in `context`, no policy) is the same
  // AuthorizerConfigurationException.
  const parsed = v.safeParse(AuthorizerResult, raw);
  if (!parsed.success) return { kind: 'error', cause: `authorizer returned an unusable result: ${v.summarize(parsed.issues)}` };
  return { result: parsed.output };
}

/** A cached policy is evaluated afresh for each method, as API Gateway does. */
function evaluate(result: AuthorizerResult, methodArn: string, latencyMs: number): AuthOutcome {
  const statements = result.policyDocument.Statement.filter(
    (s) => anyMatches(s.Action, 'execute-api:Invoke', true) && anyMatches(s.Resource, methodArn, false),
  );
  // REST APIs hand the integration every context value as a string.
  const context: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(result.context ?? {})) {
    if (value === undefined) continue;
    context[key] = value === null ? null : String(value);
  }
  context.principalId = result.principalId;
  if (statements.some((s) => s.Effect === 'Deny') || !statements.some((s) => s.Effect === 'Allow')) return { kind: 'forbidden', context };
  context.integrationLatency = latencyMs;
  return { kind: 'allow', context };
}

function parseIdentitySource(source: string): (e: APIGatewayRequestAuthorizerEvent) => string | undefined {
  const header = /^method\.request\.header\.(.+)$/.exec(source)?.[1];
  if (header) {
    const lower = header.toLowerCase();
    return (e) => Object.entries(e.headers ?? {}).find(([k]) => k.toLowerCase() === lower)?.[1];
  }
  const query = /^method\.request\.querystring\.(.+)$/.exec(source)?.[1];
  if (query) return (e) => e.queryStringParameters?.[query];
  throw new Error(`Unsupported authorizer identity source ${source}`);
}

function anyMatches(patterns: string | string[] | undefined, value: string, ignoreCase: boolean): boolean {
  if (patterns === undefined) return false;
  return (Array.isArray(patterns) ? patterns : [patterns]).some((p) => wildcardMatch(p, value, ignoreCase));
}

/** IAM wildcards: `*` any run of characters, `?` any one character. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  return wildcardMatcher(pattern, ignoreCase)(value);
}

/** wildcardMatch with the pattern compiled once, for patterns checked on every request. */
export function wildcardMatcher(pattern: string, ignoreCase = false): (value: string) => boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.');
  const re = new RegExp(`^${source}$`, ignoreCase ? 'is' : 's');
  return (value) => re.test(value);
}

/** Checks `Authorization: Bearer <token>` against the owner token's digest. */
export function ownerTokenCheck(ownerToken: string): (header: string | undefined) => boolean {
  if (ownerToken.length === 0) throw new Error('The owner token must not be empty');
  const expected = sha256(ownerToken);
  return (header) => {
    const presented = header === undefined ? undefined : /^Bearer +(\S+) *$/i.exec(header)?.[1];
    // Hashing first gives equal lengths, so the comparison time says nothing about the token.
    const equal = timingSafeEqual(sha256(presented ?? ''), expected);
    return presented !== undefined && equal;
  };
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
