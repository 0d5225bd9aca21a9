/**
 * S3's CORS, as it answers a browser for a bucket with a CORS configuration: the preflight
 * (OPTIONS, unauthenticated, matched against the rules in order) and the headers added to an
 * actual request from an allowed origin. The rules come from where the real bucket's come from
 * (lib/storage-cors.ts locally, the template's CorsConfiguration under start:synth).
 */
import type { BucketCorsRule } from '../storage-cors';
import { S3Error, type Headers } from './s3-request';

const one = (h: string | string[] | undefined): string | undefined => (Array.isArray(h) ? h.join(',') : h);

/** S3's wildcard: `*` matches any run of characters (one `*` per value at most, as S3 accepts them). */
function wildcard(pattern: string, value: string, caseless: boolean): boolean {
  const p = caseless ? pattern.toLowerCase() : pattern;
  const v = caseless ? value.toLowerCase() : value;
  const star = p.indexOf('*');
  if (star < 0) return p === v;
  const head = p.slice(0, star);
  const tail = p.slice(star + 1);
  return v.length >= head.length + tail.length && v.startsWith(head) && v.endsWith(tail);
}

const ruleFor = (rules: readonly BucketCorsRule[], origin: string, method: string): BucketCorsRule | undefined =>
  rules.find((r) => r.allowedOrigins.some((o) => wildcard(o, origin, false)) && r.allowedMethods.includes(method));

const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

const forbidden = (method: string) =>
  new S3Error(
    403,
    'AccessForbidden',
    "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
    { Method: method, ResourceType: 'OBJECT' },
  );

/** The answer to a preflight: its headers when a rule allows it; an S3Error otherwise. */
export function preflight(rules: readonly BucketCorsRule[], headers: Headers): Record<string, string> {
  const origin = one(headers.origin);
  const method = one(headers['access-control-request-method']);
  if (origin === undefined) throw new S3Error(400, 'BadRequest', 'Insufficient information. Origin request header needed.');
  if (method === undefined) throw new S3Error(400, 'BadRequest', 'Invalid Access-Control-Request-Method: null');
  if (rules.length === 0)
    throw new S3Error(403, 'AccessForbidden', 'CORSResponse: CORS is not enabled for this bucket.', {
      Method: method,
      ResourceType: 'OBJECT',
    });
  const asked = (one(headers['access-control-request-headers']) ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  const rule = rules.find(
    (r) =>
      r.allowedOrigins.some((o) => wildcard(o, origin, false)) &&
      r.allowedMethods.includes(method) &&
      asked.every((h) => r.allowedHeaders.some((a) => wildcard(a, h, true))),
  );
  if (!rule) throw forbidden(method);
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': rule.allowedMethods.join(', '),
    ...(asked.length > 0 ? { 'Access-Control-Allow-Headers': asked.join(', ') } : {}),
    ...(rule.exposedHeaders.length > 0 ? { 'Access-Control-Expose-Headers': rule.exposedHeaders.join(', ') } : {}),
    'Access-Control-Max-Age': String(rule.maxAgeSeconds),
    'Access-Control-Allow-Credentials': 'true',
    Vary: VARY,
  };
}

/** The headers S3 adds to an actual request whose Origin and method a rule allows (none otherwise). */
export function corsHeaders(rules: readonly BucketCorsRule[], headers: Headers, method: string): Record<string, string> {
  const origin = one(headers.origin);
  const rule = origin === undefined ? undefined : ruleFor(rules, origin, method);
  if (!rule || origin === undefined) return {};
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': rule.allowedMethods.join(', '),
    ...(rule.exposedHeaders.length > 0 ? { 'Access-Control-Expose-Headers': rule.exposedHeaders.join(', ') } : {}),
    'Access-Control-Max-Age': String(rule.maxAgeSeconds),
    'Access-Control-Allow-Credentials': 'true',
    Vary: VARY,
  };
}
