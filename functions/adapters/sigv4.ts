/**
 * SigV4 for every AWS call pipegate makes without an SDK client: the CLI's owner calls to API
 * Gateway (execute-api), KMS and Secrets Manager (their JSON protocol), S3 object reads and the
 * presigned GETs of stored objects. One signer, @smithy/signature-v4 (the one the SDK clients
 * use, already in every function's bundle through the DynamoDB client), configured per service
 * as the SDK configures it; and one retry rule for the calls, as the SDK's standard mode.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When temporary credentials stop working (a provider refreshes them before). */
  expiration?: Date;
}
export type CredentialSource = AwsCredentials | (() => Promise<AwsCredentials>);

export interface SignableRequest {
  method: string;
  url: URL;
  /**
   * The path as sent and signed, when the URL's own would differ: an S3 key escaped once
   * (object-reads.ts s3ObjectPath), whose `.` and `..` segments a URL would resolve away.
   */
  path?: string;
  headers: Record<string, string>;
  body?: string;
}

export interface SignOptions {
  region: string;
  credentials: CredentialSource;
  /** The signing name: execute-api (default), kms, secretsmanager, s3. */
  service?: string;
  /** Fixed signing time (tests); defaults to now. */
  now?: Date;
  /**
   * Sends (and signs) `x-amz-content-sha256`, as the SDK's clients do: S3 requires it; the JSON
   * services accept it; execute-api and the SigV4 test vectors go without. Default: S3 only.
   */
  payloadHashHeader?: boolean;
}

/**
 * The signer as the SDK builds it for `service`: S3 signs the path exactly as sent (no second
 * escaping); every other service escapes it again. The signature covers the body either way.
 */
function signerFor(opts: SignOptions): SignatureV4 {
  const service = opts.service ?? 'execute-api';
  return new SignatureV4({
    service,
    region: opts.region,
    credentials: opts.credentials,
    sha256: Sha256,
    uriEscapePath: service !== 's3',
    applyChecksum: opts.payloadHashHeader ?? service === 's3',
  });
}

function toHttpRequest(req: SignableRequest, headers: Record<string, string>) {
  const query: Record<string, string> = {};
  for (const [k, v] of req.url.searchParams) query[k] = v;
  return {
    method: req.method.toUpperCase(),
    protocol: req.url.protocol,
    hostname: req.url.hostname,
    ...(req.url.port ? { port: Number(req.url.port) } : {}),
    path: req.path ?? req.url.pathname,
    query,
    headers,
    ...(req.body !== undefined ? { body: req.body } : {}),
  };
}

/**
 * The headers to send for `req`, signed: the given ones plus `authorization`, `x-amz-date`
 * and, with temporary credentials, `x-amz-security-token`. `host` is signed but left out of
 * the result, since fetch sets it from the URL itself.
 */
export async function signRequest(req: SignableRequest, opts: SignOptions): Promise<Record<string, string>> {
  const headers: Record<string, string> = { host: req.url.host };
  for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
  const signed = await signerFor(opts).sign(toHttpRequest(req, headers), opts.now ? { signingDate: opts.now } : {});
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = v;
  return out;
}

/**
 * A presigned URL for `req` (query signing), valid `expiresIn` seconds from the signing time.
 * For S3 the payload is UNSIGNED-PAYLOAD, as S3's own presigner signs it: a GET has no body.
 */
export async function presignUrl(req: Omit<SignableRequest, 'body'>, opts: SignOptions & { expiresIn: number }): Promise<string> {
  const headers: Record<string, string> = { host: req.url.host };
  for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
  // Named as S3's presigner names it: the header is hoisted into the query under this name.
  if (opts.service === 's3') headers['X-Amz-Content-Sha256'] = 'UNSIGNED-PAYLOAD';
  const signed = await signerFor(opts).presign(toHttpRequest(req, headers), {
    expiresIn: opts.expiresIn,
    ...(opts.now ? { signingDate: opts.now } : {}),
  });
  const search = Object.entries(signed.query ?? {}).flatMap(([k, v]) =>
    Array.isArray(v) ? v.map((x) => [k, x] as const) : v === null ? [] : [[k, v] as const],
  );
  // Escaped as SigV4 canonicalizes (URLSearchParams would write a space as `+`, which S3 reads as a plus sign).
  return `${req.url.origin}${req.path ?? req.url.pathname}?${search.map(([k, v]) => `${awsUriEncode(k)}=${awsUriEncode(v)}`).join('&')}`;
}

/** RFC 3986 escaping as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ */
export const awsUriEncode = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/* ------------------------------------------------------------------ calls */

/**
 * An error an AWS service answered, named as the service names it (NoSuchKey,
 * ThrottlingException, AccessDeniedException, ...), with the HTTP status where the SDK keeps
 * it (`$metadata.httpStatusCode`), so code that reads SDK errors reads these alike.
 */
export class AwsCallError extends Error {
  readonly $metadata: { httpStatusCode: number };
  constructor(
    name: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = name;
    this.$metadata = { httpStatusCode: status };
  }
}

/** Error names AWS services use for throttling and passing trouble: worth another attempt. */
const RETRYABLE_NAMES = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ProvisionedThroughputExceededException',
  'KMSInternalException',
  'InternalServiceError',
  'InternalFailure',
  'InternalError',
  'ServiceUnavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  'TimeoutError',
]);
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
const RETRYABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a failed call is worth another attempt: a throttle, a 5xx, a dropped connection. */
export function isRetryable(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const { name, code, status } = e as { name?: unknown; code?: unknown; status?: unknown };
  return (
    (typeof name === 'string' && RETRYABLE_NAMES.has(name)) ||
    (typeof status === 'number' && RETRYABLE_STATUS.has(status)) ||
    (typeof code === 'string' && RETRYABLE_CODES.has(code))
  );
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The n-th retry waits a random time up to min(capMs, baseMs · 2^n) (full jitter). */
  baseMs: number;
  capMs: number;
  /** Injected by tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** The SDK's standard mode: three attempts, full jitter from 100 ms, never more than 20 s. */
export const STANDARD_RETRY: RetryPolicy = { maxAttempts: 3, baseMs: 100, capMs: 20_000 };

const pause = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/** `attempt` again while it fails with something retryable, within the policy's attempts. */
export async function withRetries<T>(attempt: () => Promise<T>, policy: RetryPolicy = STANDARD_RETRY): Promise<T> {
  const sleep = policy.sleep ?? pause;
  const random = policy.random ?? Math.random;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (n + 1 >= policy.maxAttempts || !isRetryable(e)) throw e;
      await sleep(Math.floor(random() * Math.min(policy.capMs, policy.baseMs * 2 ** n)));
    }
  }
}

/** How long a call may wait for the answer's headers (its body is read without a deadline). */
const HEADERS_TIMEOUT_MS = 10_000;

/** An AWS answer: its status, headers (lower-case names) and body, not yet read. */
export interface AwsAnswer {
  status: number;
  headers: Record<string, string>;
  body: IncomingMessage;
}

/** The whole body of an answer. */
export async function readBody(body: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/**
 * One signed request, over node:http(s) rather than fetch: the path goes out exactly as
 * signed (a URL would resolve an S3 key's `..` segments), and transport failures carry the
 * socket's `code` as the SDK's do (`TimeoutError` when no answer came in time), so callers and
 * retries read them alike. Any HTTP answer, success or not, is returned for the caller to read.
 */
export async function signedRequest(req: SignableRequest, opts: SignOptions & { timeoutMs?: number }): Promise<AwsAnswer> {
  const headers = await signRequest(req, opts);
  if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
  const timeoutMs = opts.timeoutMs ?? HEADERS_TIMEOUT_MS;
  const send = req.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AwsAnswer>((resolve, reject) => {
    const r = send(
      {
        method: req.method,
        hostname: req.url.hostname.replace(/^\[(.*)\]$/, '$1'),
        ...(req.url.port ? { port: Number(req.url.port) } : {}),
        path: `${req.path ?? req.url.pathname}${req.url.search}`,
        headers,
      },
      (res) => {
        clearTimeout(timer);
        const flat: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
        resolve({ status: res.statusCode ?? 0, headers: flat, body: res });
      },
    );
    const timer = setTimeout(
      () => r.destroy(Object.assign(new Error(`${opts.service ?? 'AWS'} did not answer within ${timeoutMs} ms`), { name: 'TimeoutError' })),
      timeoutMs,
    );
    r.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    r.end(req.body);
  });
}

export interface JsonServiceOptions {
  region: string;
  /** Its signing name: kms, secretsmanager. */
  service: string;
  /** The X-Amz-Target prefix: TrentService (KMS), secretsmanager. */
  targetPrefix: string;
  endpoint: string;
  credentials: CredentialSource;
  /** How errors name the service (`KMS GenerateDataKey: ...`); default the signing name. */
  label?: string;
  /** The error to throw for an answered failure (a service's own subclass); default AwsCallError. */
  error?: (name: string, message: string, status: number) => AwsCallError;
  retry?: RetryPolicy;
}

/**
 * One call of an AWS JSON 1.1 protocol service (KMS, Secrets Manager): the operation's JSON in,
 * its answer's JSON out, the service's error thrown as an AwsCallError named by its `__type`;
 * throttles and 5xx tried again under the retry policy.
 */
export function jsonServiceCall(
  opts: JsonServiceOptions,
): (operation: string, body: Record<string, unknown>) => Promise<Record<string, unknown>> {
  return (operation, body) =>
    withRetries(async () => {
      const text = JSON.stringify(body);
      const answer = await signedRequest(
        {
          method: 'POST',
          url: new URL('/', opts.endpoint),
          headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `${opts.targetPrefix}.${operation}` },
          body: text,
        },
        { region: opts.region, service: opts.service, credentials: opts.credentials, payloadHashHeader: true },
      );
      const raw = (await readBody(answer.body)).toString('utf8');
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // An answer that is not JSON (a proxy's error page) is named by its status below.
      }
      if (answer.status >= 200 && answer.status < 300) return parsed;
      // `__type` may carry a namespace (`com.amazonaws.kms#NotFoundException`); the name is after the `#`.
      const label = opts.label ?? opts.service;
      const type = typeof parsed.__type === 'string' ? (parsed.__type.split('#').pop() ?? parsed.__type) : `${label}${answer.status}`;
      const message = typeof parsed.message === 'string' ? parsed.message : typeof parsed.Message === 'string' ? parsed.Message : '';
      const make = opts.error ?? ((n: string, m: string, s: number) => new AwsCallError(n, m, s));
      throw make(type, `${label} ${operation}: ${type}${message ? `: ${message}` : ''}`, answer.status);
    }, opts.retry);
}

/** A service's endpoint as the SDK picks it: AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL, then the region's. */
export function serviceEndpoint(env: Record<string, string | undefined>, envName: string, host: string): string {
  return env[`AWS_ENDPOINT_URL_${envName}`] ?? env.AWS_ENDPOINT_URL ?? `https://${host}`;
}

/** The credentials Lambda hands a function in its environment (and start:synth its sandboxes). */
export function environmentCredentials(env: Record<string, string | undefined>): AwsCredentials {
  return {
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  };
}
