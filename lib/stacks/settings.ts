/**
 * Deploy-time choices, read from CDK context (`cdk.json` or `-c key=value`) and checked at synth.
 */
import * as v from 'valibot';
import type { Node } from 'constructs';
import { DEFAULT_EXECUTION_TIMEOUT_MS, PublicUrlSchema } from '../config';

import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../workflow-budget';
import { DEFAULT_MAX_ACCOUNT_SHARE, MAX_RESERVED_CONCURRENCY, minimumReservation } from '../concurrency';
import { allFunctionNames } from './permissions';

export { EXPRESS_MAX_EXECUTION_TIMEOUT_MS };

/** Synth needs no AWS call when both are explicit; the CLI fills them in from credentials on deploy. */
export const PLACEHOLDER_ENV = { account: '123456789012', region: 'us-east-1' } as const;

export interface Settings {
  stackName: string;
  stageName: string;
  /**
   * The execution time-out of a pipeline whose definition sets no `timeout_ms`
   * (PIPEGATE_EXECUTION_TIMEOUT_MS). An execution on the Express state machine is held within
   * what Express allows (EXPRESS_MAX_EXECUTION_TIMEOUT_MS) whatever this says; one on Standard
   * takes it as it is.
   */
  executionTimeoutMs: number;
  throttleRateLimit: number;
  throttleBurstLimit: number;
  logRetentionDays: number;
  /** Where alarm notifications go; none when unset (the topic is still created). */
  alarmEmail: string | undefined;
  /** The base URL callers use (a custom domain); none means API Gateway's own host and stage. */
  publicUrl: string | undefined;
  /**
   * The WAF web ACL on the stage: it answers 413 to bodies of 5,000,000 bytes or more before they
   * reach Lambda, whose 6 MB invocation limit would otherwise turn them into a 500, and carries
   * the rate-based rules and the managed rule groups. false leaves the whole web ACL out.
   */
  payloadGuard: boolean;
  /**
   * Units of the account's Lambda concurrency pipegate reserves, shared out by class
   * (lib/concurrency.ts) as each function's reserved concurrency and the SQS event sources'
   * maximum concurrency. 0 (the default) reserves nothing: every function draws on the account's
   * shared pool, which deploys on any account. A deploy-time check refuses, before any function
   * is touched, a figure the account cannot give.
   */
  reservedConcurrency: number;
  /** The most of the account's concurrency quota a reservation may take, in percent (checked at deploy). */
  maxAccountShare: number;
  /**
   * The state machine's log level: ERROR (the default) logs failed executions only, with their
   * data; ALL logs every event of every execution with its data (≈ 6 KB an execution, ≈ $3 per
   * million at CloudWatch Logs' ingestion price).
   */
  stateMachineLogLevel: 'ERROR' | 'ALL';
  /** Lambda's own log lines (START, END, REPORT are INFO): WARN leaves them out, for cost. */
  lambdaSystemLogLevel: 'WARN' | 'INFO' | 'DEBUG';
  /**
   * The web ACL's rate-based rule: requests a minute from one client address (WAF counts per
   * source IP over a 60 s window) past which that address is answered 429 until its rate falls.
   */
  rateLimitPerAddress: number;
  /** The same for paths under `/v1/forms/` (public form links), counted on their own and stricter. */
  formRateLimitPerAddress: number;
  /**
   * Who may call the owner routes besides IAM's own check: 12-digit account ids (any principal of
   * that account) and IAM principal ARNs (wildcards allowed). Empty means the deploying account.
   */
  ownerPrincipals: readonly string[];
}

/** WAF's smallest rate-based limit (per evaluation window). */
const WAF_MIN_RATE_LIMIT = 10;
const WAF_MAX_RATE_LIMIT = 2_000_000_000;

const ACCOUNT_ID = /^\d{12}$/;
const PRINCIPAL_ARN = /^arn:aws[a-z-]*:(iam|sts)::\d{12}:[A-Za-z0-9+=,.@_/*?-]+$/;
/** An account root ARN names the whole account, as the account id does. */
const ROOT_ARN = /^arn:aws[a-z-]*:iam::(\d{12}):root$/;

/** Account ids and principal ARNs, from a list or a comma-separated string (`-c ownerPrincipals=a,b`). */
const OwnerPrincipalsSchema = v.pipe(
  v.union([
    v.array(v.string()),
    v.pipe(
      v.string(),
      v.transform((s) => s.split(',')),
    ),
  ]),
  v.transform((list) =>
    list
      .map((p) => p.trim())
      .filter((p) => p !== '')
      .map((p) => ROOT_ARN.exec(p)?.[1] ?? p),
  ),
  v.check(
    (list) => list.every((p) => ACCOUNT_ID.test(p) || PRINCIPAL_ARN.test(p)),
    'each must be a 12-digit account id or an IAM principal ARN',
  ),
);

/** The retention periods CloudWatch Logs accepts. */
const RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];

// Context given on the command line arrives as strings; cdk.json gives numbers.
const num = (min: number, max: number) =>
  v.pipe(v.union([v.number(), v.pipe(v.string(), v.transform(Number))]), v.number(), v.integer(), v.minValue(min), v.maxValue(max));

const ContextSchema = v.object({
  stackName: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z][A-Za-z0-9-]{0,100}$/)), 'Pipegate'),
  stageName: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_]{1,64}$/)), 'api'),
  // Up to 7 days (a definition's own `timeout_ms` at most): the steps keep it, not one Lambda.
  executionTimeoutMs: v.optional(num(1_000, 604_800_000), DEFAULT_EXECUTION_TIMEOUT_MS),
  throttleRateLimit: v.optional(num(1, 10_000), 100),
  throttleBurstLimit: v.optional(num(1, 5_000), 200),
  logRetentionDays: v.optional(
    v.pipe(
      num(1, 3653),
      v.check((d) => RETENTION_DAYS.includes(d), `must be one of ${RETENTION_DAYS.join(', ')}`),
    ),
    30,
  ),
  alarmEmail: v.optional(v.pipe(v.string(), v.email())),
  publicUrl: v.optional(PublicUrlSchema),
  payloadGuard: v.optional(
    v.union([
      v.boolean(),
      v.pipe(
        v.picklist(['true', 'false']),
        v.transform((x) => x === 'true'),
      ),
    ]),
    true,
  ),
  reservedConcurrency: v.optional(
    v.pipe(
      num(0, MAX_RESERVED_CONCURRENCY),
      v.check(
        (n) => n === 0 || n >= minimumReservation(allFunctionNames()),
        `must be 0 (reserve nothing) or at least ${minimumReservation(allFunctionNames())} (one unit for each function, two for each queue consumer)`,
      ),
    ),
    0,
  ),
  maxAccountShare: v.optional(num(1, 100), DEFAULT_MAX_ACCOUNT_SHARE),
  stateMachineLogLevel: v.optional(v.picklist(['ERROR', 'ALL']), 'ERROR'),
  lambdaSystemLogLevel: v.optional(v.picklist(['WARN', 'INFO', 'DEBUG']), 'WARN'),
  rateLimitPerAddress: v.optional(num(WAF_MIN_RATE_LIMIT, WAF_MAX_RATE_LIMIT), 1_200),
  formRateLimitPerAddress: v.optional(num(WAF_MIN_RATE_LIMIT, WAF_MAX_RATE_LIMIT), 120),
  ownerPrincipals: v.optional(OwnerPrincipalsSchema, []),
});

export type SettingsInput = v.InferInput<typeof ContextSchema>;

/** Settings an earlier release took, with what replaces each: given one, synth stops and says so. */
const RETIRED: Readonly<Record<string, string>> = {
  stateMachineType:
    'stateMachineType is retired: the stack deploys an Express and a Standard state machine, and each pipeline version runs on the one ' +
    'it needs, decided when it is pushed (Standard when a node may wait or it may run past what Express allows). Remove the setting; ' +
    `a pipeline that needs more than ${EXPRESS_MAX_EXECUTION_TIMEOUT_MS} ms without waiting sets its own timeout_ms`,
  accountConcurrency:
    'accountConcurrency is retired: reserved concurrency is now opt-in. Set reservedConcurrency to the units pipegate may reserve ' +
    '(an account of N was given N - 100 before; 0, the default, reserves nothing), and maxAccountShare to the most of the account it may take',
};

export function parseSettings(input: Record<string, unknown>): Settings {
  const retired = Object.keys(RETIRED).filter((k) => input[k] !== undefined);
  if (retired.length > 0) throw new Error(`Invalid pipegate context:\n  ${retired.map((k) => RETIRED[k]).join('\n  ')}`);
  const parsed = v.safeParse(ContextSchema, input);
  if (!parsed.success) {
    const lines = parsed.issues.map((i) => `${v.getDotPath(i) ?? '?'}: ${i.message}`);
    throw new Error(`Invalid pipegate context:\n  ${lines.join('\n  ')}`);
  }
  const c = parsed.output;
  if (c.formRateLimitPerAddress > c.rateLimitPerAddress) {
    throw new Error(
      `formRateLimitPerAddress ${c.formRateLimitPerAddress} must not exceed rateLimitPerAddress ${c.rateLimitPerAddress}: form links are public and counted on their own`,
    );
  }
  return {
    stackName: c.stackName,
    stageName: c.stageName,
    executionTimeoutMs: c.executionTimeoutMs,
    throttleRateLimit: c.throttleRateLimit,
    throttleBurstLimit: c.throttleBurstLimit,
    logRetentionDays: c.logRetentionDays,
    alarmEmail: c.alarmEmail,
    publicUrl: c.publicUrl,
    payloadGuard: c.payloadGuard,
    reservedConcurrency: c.reservedConcurrency,
    maxAccountShare: c.maxAccountShare,
    stateMachineLogLevel: c.stateMachineLogLevel,
    lambdaSystemLogLevel: c.lambdaSystemLogLevel,
    rateLimitPerAddress: c.rateLimitPerAddress,
    formRateLimitPerAddress: c.formRateLimitPerAddress,
    ownerPrincipals: c.ownerPrincipals,
  };
}

const KEYS = [...Object.keys(ContextSchema.entries), ...Object.keys(RETIRED)];

/** The settings from a construct tree's context. */
export function settingsFrom(node: Node): Settings {
  const input: Record<string, unknown> = {};
  for (const k of KEYS) {
    const value: unknown = node.tryGetContext(k);
    if (value !== undefined && value !== '') input[k] = value;
  }
  return parseSettings(input);
}
