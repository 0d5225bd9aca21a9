/**
 * The one configuration reader: every environment variable pipegate reads, checked with
 * valibot, with the same names on AWS and on the local runtime. Plain data: no aws-cdk-lib.
 */
import * as v from 'valibot';

const bool = (fallback: boolean) =>
  v.pipe(
    v.optional(v.string(), String(fallback)),
    v.transform((s) => s.trim().toLowerCase()),
    v.picklist(['true', 'false', '1', '0', 'yes', 'no'], 'must be true or false'),
    v.transform((s) => s === 'true' || s === '1' || s === 'yes'),
  );

const int = (fallback: number, min: number, max: number) =>
  v.pipe(
    v.optional(v.string(), String(fallback)),
    v.transform((s) => Number(s)),
    v.number('must be a number'),
    v.integer('must be a whole number'),
    v.minValue(min),
    v.maxValue(max),
  );

const seconds = v.pipe(
  v.optional(v.string(), '4,30,120,600,1800,3600,7200,14400,28800,36000'),
  v.transform((s) => s.split(',').map((x) => Number(x.trim()))),
  v.array(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(43200)), 'must be whole seconds'),
  v.minLength(1),
);

/**
 * The base URL callers use (scheme, host, any stage or prefix): absolute http(s), no query or
 * fragment, kept without a trailing slash. Blank means none.
 */
export const PublicUrlSchema = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => {
    if (s === '') return true;
    try {
      const u = new URL(s);
      return (
        (u.protocol === 'http:' || u.protocol === 'https:') &&
        u.hostname !== '' &&
        u.search === '' &&
        u.hash === '' &&
        u.username === '' &&
        u.password === ''
      );
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL without credentials, query or fragment'),
  v.transform((s) => (s === '' ? undefined : s.replace(/\/+$/, ''))),
);

/**
 * The time-out of an execution whose pipeline sets no `timeout_ms`: 300 s. An execution on the
 * Express state machine is held within what Express allows (170 s, lib/workflow-budget.ts).
 */
export const DEFAULT_EXECUTION_TIMEOUT_MS = 300_000;

/** How long a finished execution's result stays readable; the bucket's lifecycle rule follows it. */
export const DEFAULT_RESULT_RETENTION_DAYS = 7;

/** Every route's body limit as the service ships it (PIPEGATE_MAX_BODY_BYTES unset): 256 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 262_144;

/**
 * Days after writing that the bucket's lifecycle rule expires an object: one more than results
 * are kept. S3 counts whole days and expires at the next midnight UTC, so with 7 days an object
 * lives 8 to 9 days: never less than the result naming it (written at or after the execution's
 * creation, from which the result stays readable 7 days), nor an upload an execution used
 * within a day of it.
 */
export const objectExpiryDays = (resultRetentionDays: number): number => resultRetentionDays + 1;

const ConfigSchema = v.object({
  PIPEGATE_TABLE: v.optional(v.string(), 'pipegate'),
  PIPEGATE_EXECUTIONS_QUEUE_URL: v.optional(v.string(), ''),
  PIPEGATE_CALLBACKS_QUEUE_URL: v.optional(v.string(), ''),
  PIPEGATE_EXPRESS_STATE_MACHINE_ARN: v.optional(v.string(), ''),
  PIPEGATE_STANDARD_STATE_MACHINE_ARN: v.optional(v.string(), ''),
  PIPEGATE_SECRET_ARN: v.optional(v.string(), ''),
  PIPEGATE_OWNER_SECRETS_KEY: v.optional(v.string(), ''),
  PIPEGATE_DYNAMODB_ENDPOINT: v.optional(v.string()),
  PIPEGATE_DYNAMODB_TRANSPORT: v.optional(v.picklist(['in-process', 'http'], 'must be in-process or http'), 'in-process'),
  PIPEGATE_EXECUTION_TIMEOUT_MS: int(DEFAULT_EXECUTION_TIMEOUT_MS, 1_000, 604_800_000),
  PIPEGATE_RESULT_RETENTION_DAYS: int(DEFAULT_RESULT_RETENTION_DAYS, 1, 365),
  PIPEGATE_MAX_BODY_BYTES: int(DEFAULT_MAX_BODY_BYTES, 1_024, 10_000_000),
  PIPEGATE_MAX_NODES: int(64, 1, 1_000),
  PIPEGATE_MAX_INPUTS: int(32, 1, 1_000),
  PIPEGATE_CALLBACK_SCHEDULE: seconds,
  PIPEGATE_CALLBACK_TIMEOUT_MS: int(10_000, 100, 60_000),
  PIPEGATE_CANCEL_POLL_MS: int(2_000, 50, 60_000),
  PIPEGATE_ALLOW_PRIVATE_URLS: bool(false),
  PIPEGATE_TRACK_OPEN: bool(true),
  PIPEGATE_DRAIN_SECONDS: int(30, 0, 3_600),
  PIPEGATE_SWEEP_INTERVAL_SECONDS: int(60, 1, 3_600),
  PIPEGATE_SWEEP_PENDING_AFTER_SECONDS: int(300, 1, 86_400),
  PIPEGATE_SWEEP_GRACE_SECONDS: int(60, 0, 3_600),
  PIPEGATE_SWEEP_LIMIT: int(100, 1, 10_000),
  PIPEGATE_MAX_WAIT_SECONDS: int(60, 0, 900),
  PIPEGATE_MAX_WAITERS: int(0, 0, 100_000),
  PIPEGATE_OWNER_SECRETS_TTL_SECONDS: int(60, 0, 3_600),
  PIPEGATE_PUBLIC_URL: v.optional(PublicUrlSchema),
  PIPEGATE_API_URL: v.optional(v.pipe(v.string(), v.url('must be an absolute URL'))),
  PIPEGATE_ASSET_LINK_TTL_SECONDS: int(86_400, 60, 604_800),
  PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: int(30, 1, 100_000),
  PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE: int(10, 1, 100_000),
  PIPEGATE_BUCKET: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')),
    'pipegate-objects',
  ),
  PIPEGATE_S3_ENDPOINT: v.optional(v.pipe(v.string(), v.url('must be an absolute URL'))),
  PIPEGATE_S3_FORCE_PATH_STYLE: bool(false),
  PIPEGATE_LOG_FORMAT: v.optional(v.picklist(['json', 'text'], 'must be json or text')),
  AWS_REGION: v.optional(v.string(), 'us-east-1'),
  // Set by Lambda: the wait bound counts each function's waiters apart.
  AWS_LAMBDA_FUNCTION_NAME: v.optional(v.string(), 'local'),
});

export type Config = {
  table: string;
  executionsQueueUrl: string;
  callbacksQueueUrl: string;
  /** The two state machines' ARNs (one ASL document): Express for short executions, Standard for those that may wait. */
  stateMachineArns: { express: string; standard: string };
  secretArn: string;
  /** The KMS key owner secrets are sealed under (its ARN); only the functions that seal or open them have one. */
  ownerSecretsKey: string;
  dynamodbEndpoint: string | undefined;
  /**
   * Local runtime: how its own functions reach its dynalite — handed over in the process
   * (default) or over loopback HTTP as any outside client does. Same SDK calls either way.
   */
  dynamodbTransport: 'in-process' | 'http';
  executionTimeoutMs: number;
  resultRetentionDays: number;
  maxBodyBytes: number;
  maxNodes: number;
  maxInputs: number;
  /** Delays before each callback retry, seconds; its length is the number of retries. */
  callbackScheduleSeconds: number[];
  callbackTimeoutMs: number;
  cancelPollMs: number;
  allowPrivateUrls: boolean;
  /** Keep open executions on the sweep index (needed where a restart must find them). */
  trackOpen: boolean;
  /** Local runtime: how long a stop lets running executions finish before failing them as interrupted. */
  drainSeconds: number;
  /** Local runtime: seconds between sweeper passes (on AWS the schedule rule sets the pace). */
  sweepIntervalSeconds: number;
  /** A `pending` execution (or an owed callback) untouched this long is queued again. */
  sweepPendingAfterSeconds: number;
  /** A `running` execution is failed as timed out this long after its time-out. */
  sweepGraceSeconds: number;
  /** Index entries one sweeper pass looks at, at most. */
  sweepLimit: number;
  /** Longest `Prefer: wait` honoured; longer asks are shortened to it (0 turns waiting off). */
  maxWaitSeconds: number;
  /**
   * Callers of this function that may wait at once (`Prefer: wait`); beyond it a request is
   * answered at once, as without the preference. 0: no bound (one process, where a wait costs
   * nothing until it is answered).
   */
  maxWaiters: number;
  /** Whose waiters `maxWaiters` counts: the Lambda function's name. */
  waitScope: string;
  /** How long a process keeps the owner secrets it read for runs; a changed value is seen within it. */
  ownerSecretsTtlSeconds: number;
  /**
   * The base URL for the URLs in answers and a deployment document's `servers`, when set;
   * otherwise each request's own (API Gateway's host and stage, or the local Host header).
   */
  publicUrl: string | undefined;
  /**
   * The API's own base URL (API Gateway's host and stage; the local runtime's address): http
   * nodes may not call it, nor publicUrl (the loop guard).
   */
  apiUrl: string | undefined;
  /**
   * The origins the objects bucket's CORS rule lets browsers PUT from (lib/storage-cors.ts): the
   * API's own and the public URL's (on AWS the service stack's upload-cors resource puts the rule
   * in; the local runtime's is its own address). A web form served at one of these uploads files
   * straight to storage; elsewhere it sends them inline.
   */
  formUploadOrigins: string[];
  /** How long an asset link (GET /v1/assets/{token}) works after it is minted. */
  assetLinkTtlSeconds: number;
  /** Runs and uploads one web-form link takes per minute (all addresses together); beyond: 429. */
  formLinkActionsPerMinute: number;
  /** Runs and uploads one client address makes per minute through web forms (all links together); beyond: 429. */
  formAddressActionsPerMinute: number;
  /** The one bucket holding every object (asset bytes, large values); see functions/core/object-keys.ts. */
  bucket: string;
  /** A custom S3 endpoint (the local runtime's emulation, start:synth's endpoint); none on AWS. */
  s3Endpoint: string | undefined;
  /** Address buckets in the path (`<endpoint>/<bucket>/<key>`), as local endpoints need. */
  s3ForcePathStyle: boolean;
  /** Local runtime: its log lines as JSON or as text; unset means text on a terminal, JSON otherwise. */
  logFormat: 'json' | 'text' | undefined;
  region: string;
};

export class ConfigError extends Error {}

/** How long past its HTTP time-out a claim on a callback attempt lasts: time to record the attempt. */
export const CALLBACK_CLAIM_MARGIN_MS = 10_000;

/**
 * How long one message's claim on a callback attempt keeps duplicates from sending it. A
 * sweeper re-queue of an owed callback must find it expired, so readConfig keeps the sweeper's
 * quiet period longer.
 */
export const callbackClaimMs = (c: Pick<Config, 'callbackTimeoutMs'>): number => c.callbackTimeoutMs + CALLBACK_CLAIM_MARGIN_MS;

export function readConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = v.safeParse(ConfigSchema, env);
  if (!parsed.success) {
    const lines = parsed.issues.map((i) => `${v.getDotPath(i) ?? '?'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const c = parsed.output;
  const claimMs = callbackClaimMs({ callbackTimeoutMs: c.PIPEGATE_CALLBACK_TIMEOUT_MS });
  if (c.PIPEGATE_SWEEP_PENDING_AFTER_SECONDS * 1000 <= claimMs) {
    throw new ConfigError(
      `Invalid configuration:\n  PIPEGATE_SWEEP_PENDING_AFTER_SECONDS: must be longer than a callback attempt's claim (PIPEGATE_CALLBACK_TIMEOUT_MS + ${CALLBACK_CLAIM_MARGIN_MS} ms = ${claimMs} ms)`,
    );
  }
  return {
    table: c.PIPEGATE_TABLE,
    executionsQueueUrl: c.PIPEGATE_EXECUTIONS_QUEUE_URL,
    callbacksQueueUrl: c.PIPEGATE_CALLBACKS_QUEUE_URL,
    stateMachineArns: { express: c.PIPEGATE_EXPRESS_STATE_MACHINE_ARN, standard: c.PIPEGATE_STANDARD_STATE_MACHINE_ARN },
    secretArn: c.PIPEGATE_SECRET_ARN,
    ownerSecretsKey: c.PIPEGATE_OWNER_SECRETS_KEY,
    dynamodbEndpoint: c.PIPEGATE_DYNAMODB_ENDPOINT,
    dynamodbTransport: c.PIPEGATE_DYNAMODB_TRANSPORT,
    executionTimeoutMs: c.PIPEGATE_EXECUTION_TIMEOUT_MS,
    resultRetentionDays: c.PIPEGATE_RESULT_RETENTION_DAYS,
    maxBodyBytes: c.PIPEGATE_MAX_BODY_BYTES,
    maxNodes: c.PIPEGATE_MAX_NODES,
    maxInputs: c.PIPEGATE_MAX_INPUTS,
    callbackScheduleSeconds: c.PIPEGATE_CALLBACK_SCHEDULE,
    callbackTimeoutMs: c.PIPEGATE_CALLBACK_TIMEOUT_MS,
    cancelPollMs: c.PIPEGATE_CANCEL_POLL_MS,
    allowPrivateUrls: c.PIPEGATE_ALLOW_PRIVATE_URLS,
    trackOpen: c.PIPEGATE_TRACK_OPEN,
    drainSeconds: c.PIPEGATE_DRAIN_SECONDS,
    sweepIntervalSeconds: c.PIPEGATE_SWEEP_INTERVAL_SECONDS,
    sweepPendingAfterSeconds: c.PIPEGATE_SWEEP_PENDING_AFTER_SECONDS,
    sweepGraceSeconds: c.PIPEGATE_SWEEP_GRACE_SECONDS,
    sweepLimit: c.PIPEGATE_SWEEP_LIMIT,
    maxWaitSeconds: c.PIPEGATE_MAX_WAIT_SECONDS,
    maxWaiters: c.PIPEGATE_MAX_WAITERS,
    waitScope: c.AWS_LAMBDA_FUNCTION_NAME,
    ownerSecretsTtlSeconds: c.PIPEGATE_OWNER_SECRETS_TTL_SECONDS,
    publicUrl: c.PIPEGATE_PUBLIC_URL,
    apiUrl: c.PIPEGATE_API_URL,
    formUploadOrigins: [c.PIPEGATE_API_URL, c.PIPEGATE_PUBLIC_URL].flatMap((u) => (u ? [new URL(u).origin] : [])),
    assetLinkTtlSeconds: c.PIPEGATE_ASSET_LINK_TTL_SECONDS,
    formLinkActionsPerMinute: c.PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE,
    formAddressActionsPerMinute: c.PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE,
    bucket: c.PIPEGATE_BUCKET,
    s3Endpoint: c.PIPEGATE_S3_ENDPOINT,
    s3ForcePathStyle: c.PIPEGATE_S3_FORCE_PATH_STYLE,
    logFormat: c.PIPEGATE_LOG_FORMAT,
    region: c.AWS_REGION,
  };
}
