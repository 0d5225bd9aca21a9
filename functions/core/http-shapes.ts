/**
 * The values of the headers and query and path parameters the routes take and answer with, as
 * valibot schemas: the OpenAPI documents convert them (functions/core/openapi-shared.ts) and
 * the handlers that check one validate with the same schema. Bodies are in shapes.ts; this
 * module stays small because the execute path loads it.
 */
import * as v from 'valibot';
import { MAX_RESUME_TOKEN_CHARS } from './resume-token';

/** Idempotency-Key: 1 to 255 printable ASCII characters, no spaces. */
export const IdempotencyKey = v.pipe(v.string(), v.minLength(1), v.maxLength(255), v.regex(/^[\x21-\x7e]+$/));

const digits = v.pipe(v.string(), v.regex(/^\d+$/));

export const PARAMETER_VALUES = {
  IdempotencyKey,
  PreferWait: v.pipe(v.string(), v.examples(['wait=20'])),
  LastEventId: digits,
  PageLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 20),
  PageCursor: v.string(),
  // The documents promise RFC 3339 (`date-time`); the service takes any time it can read, these
  // all included (services/owner-executions.service.ts sinceOf, test/unit/services/since.test.ts).
  Since: v.pipe(v.string(), v.isoTimestamp()),
  DocsAsset: v.picklist(['pipegate-docs.js', 'swagger-ui-bundle.js', 'swagger-ui.css']),
  FormToken: v.pipe(v.string(), v.regex(/^pgf_[A-Za-z0-9_-]{43}$/)),
  FormAsset: v.picklist(['pipegate-form.js', 'pipegate-form.css']),
  AssetToken: v.pipe(v.string(), v.maxLength(2048)),
  ResumeToken: v.pipe(v.string(), v.maxLength(MAX_RESUME_TOKEN_CHARS)),
  Range: v.string(),
};

export const HEADER_VALUES = {
  Location: v.pipe(v.string(), v.url()),
  PreferenceApplied: v.pipe(v.string(), v.regex(/^wait=\d+$/)),
  RetryAfterPoll: digits,
  RetryAfterLimit: v.pipe(v.number(), v.integer()),
  NoStore: v.literal('no-store'),
  ContentLength: v.string(),
  ContentDisposition: v.string(),
  NoSniff: v.string(),
  ContentRange: v.string(),
  ApiKeyChallenge: v.literal('Api-Key'),
  BearerChallenge: v.literal('Bearer'),
  RetryAfterKeyLimit: digits,
  RetryAfterOutage: digits,
  RateLimitPolicy: v.string(),
  RateLimit: v.string(),
  Allow: v.string(),
};
