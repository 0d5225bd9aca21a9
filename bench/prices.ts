/**
 * AWS list prices and the cost assumptions the benchmark prices executions with. The same
 * figures, with the same sources, are in docs/aws.md ("Cost per million executions"); change
 * both together. us-east-1 list prices, as published on each service's pricing page
 * (checked 2026).
 */
import { AWS_MAX_WAIT_SECONDS } from '../lib/workflow-budget';

export const PRICES = {
  /** https://aws.amazon.com/api-gateway/pricing/ — REST API, first 333 million requests a month. */
  apiGatewayRestPerMillion: 3.5,
  /** https://aws.amazon.com/lambda/pricing/ — requests. */
  lambdaPerMillionRequests: 0.2,
  /** https://aws.amazon.com/lambda/pricing/ — duration on arm64 (Graviton), first 7.5 billion GB-s a month. */
  lambdaArmPerGbSecond: 0.0000133334,
  /**
   * https://aws.amazon.com/lambda/pricing/ — response streaming: each GB a function streams past
   * the first 6 MB of a response. The rate is NOT confirmed from AWS's own page: the stored
   * copy of the pricing page renders its rates client-side, so the figure could not be read
   * there. AWS's developer guide ("Response streaming for Lambda functions") confirms that
   * streaming is charged (pointing at the pricing page), that the first 6 MB of a response
   * stream at uncapped bandwidth and the rest at up to 2 MB/s, and that a streamed response may
   * be 200 MB; a third-party summary of the pricing page gives the free tier (100 GiB of
   * streaming a month, the first 6 MB of each response free) but not the rate. Check it before
   * relying on the streaming figures.
   */
  lambdaStreamedPerGb: 0.008,
  /** https://aws.amazon.com/sqs/pricing/ — standard queue, per million requests (each 64 KB chunk is one). */
  sqsPerMillionRequests: 0.4,
  /** https://aws.amazon.com/step-functions/pricing/ — Standard workflows, per million state transitions. */
  sfnStandardPerMillionTransitions: 25,
  /** https://aws.amazon.com/step-functions/pricing/ — Express workflows, per million requests (executions). */
  sfnExpressPerMillionRequests: 1,
  /** https://aws.amazon.com/step-functions/pricing/ — Express duration, per GB-second (first 1,000 hours). */
  sfnExpressPerGbSecond: 0.00001667,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ — per million write request units. */
  dynamoPerMillionWriteUnits: 0.625,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ — per million read request units. */
  dynamoPerMillionReadUnits: 0.125,
  /** https://aws.amazon.com/secrets-manager/pricing/ — $0.05 per 10,000 API calls. */
  secretsManagerPerCall: 0.05 / 10_000,
  /** https://aws.amazon.com/kms/pricing/ — a customer-managed key, $1 a month (automatic rotation included: the first two rotations add $1 each, then none). */
  kmsPerKeyMonth: 1,
  /** https://aws.amazon.com/kms/pricing/ — $0.03 per 10,000 requests (symmetric: GenerateDataKey, Decrypt). */
  kmsPerRequest: 0.03 / 10_000,
  /** https://aws.amazon.com/s3/pricing/ — S3 Standard storage, first 50 TB a month, per GB-month. */
  s3StandardPerGbMonth: 0.023,
  /** https://aws.amazon.com/s3/pricing/ — PUT, COPY, POST, LIST requests: $0.005 per 1,000. */
  s3PerMillionPuts: 5,
  /** https://aws.amazon.com/s3/pricing/ — GET, SELECT and all other requests (HEAD included): $0.0004 per 1,000. DELETE and lifecycle expiry are free. */
  s3PerMillionGets: 0.4,
  /**
   * https://aws.amazon.com/ec2/pricing/on-demand/ (data transfer, which S3, API Gateway and
   * Lambda answers share) — out to the internet, first 10 TB a month after the free 100 GB;
   * transfer in, and S3 to Lambda in one region, cost nothing.
   */
  transferOutPerGb: 0.09,
  /** https://aws.amazon.com/cloudwatch/pricing/ — Logs, standard ingestion, per GB (storage at $0.03 per GB-month is left out: retention is 30 days). */
  logsPerGbIngested: 0.5,
  /** https://aws.amazon.com/xray/pricing/ — traces recorded, per million (the first 100,000 a month free, left out). */
  xrayPerMillionTracesRecorded: 5,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ — table storage (Standard table class), per GB-month (the first 25 GB free, left out). */
  dynamoStoragePerGbMonth: 0.25,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ — continuous backups (point-in-time recovery), per GB-month of table size. */
  dynamoPitrPerGbMonth: 0.2,
  /** https://aws.amazon.com/secrets-manager/pricing/ — per secret per month. */
  secretsManagerPerSecretMonth: 0.4,
  /** https://aws.amazon.com/cloudwatch/pricing/ — a standard-resolution alarm on one metric, per month. */
  cloudwatchAlarmPerMonth: 0.1,
  /** https://aws.amazon.com/waf/pricing/ — per million requests inspected; $5 a month per web ACL and $1 per rule besides. */
  wafPerMillionRequests: 0.6,
  wafPerWebAclMonth: 5,
  wafPerRuleMonth: 1,
} as const;

/** What is not measured locally, as docs/aws.md assumes it. */
export const ASSUMPTIONS = {
  /** Every function's memory (lib/stacks/pipegate-function.ts DEFAULT_MEMORY_MB). */
  lambdaMemoryMb: 256,
  /**
   * Warm billed duration per invocation, by function (task-run's own work is the pipeline's,
   * excluded; a callback's dispatch includes the receiver's answer over the internet).
   */
  lambdaWarmMs: {
    authorizer: 15,
    execute: 35,
    // An MCP request: execute's work for a tools/call, plus the SDK's Server and transport built
    // for it (measured nowhere, on AWS or by the local bench: a guess above execute's).
    'deployment-mcp': 45,
    'execution-result': 15,
    runner: 40,
    'task-start': 20,
    'callback-dispatch': 50,
    'pipeline-upload': 30,
    // A resume: the token's HMAC, three reads and writes, a message (not measured on AWS: a guess
    // between pipeline-upload and execute).
    resume: 30,
  } as Record<string, number>,
  /**
   * A step's own work in task-run, warm, beside the upstream's answers: its reads, the nodes'
   * expressions, its writes (not measured on AWS: the local bench's per-node figures are below it).
   */
  stepMs: 40,
  /** An upstream's answer to one call (a submit, a poll), as task-run waits for it: Lambda bills it. */
  upstreamMs: 200,
  /** Share of invocations that are cold, and the init each then bills (billed since August 2025). */
  coldShare: 0.01,
  coldInitSeconds: 0.4,
  /** A trivial Express execution's duration; Express bills 64 MB at least, in 100 ms steps. */
  expressSeconds: 0.2,
  expressMemoryMb: 64,
  /** Executions queue batch size at sustained load (lib/queues.ts); 1 at low load. */
  sustainedBatchSize: 10,
  /** One GetSecretValue per warm container every 15 minutes; containers that read the secret. */
  secretRefreshMinutes: 15,
  secretReadingContainers: 1,
  /**
   * POST accepted → terminal for the trivial pipeline on AWS, not measured here: the event
   * source mapping handing the message to the runner, the runner, the Express execution (0.2 s
   * above). Polls and waits are also priced at this time, since locally, under 64 callers on 2
   * shared cores, an execution waits behind the others in a way AWS's scaling does not.
   */
  awsExecutionSeconds: 0.5,
  /** The longest `Prefer: wait` on AWS (PIPEGATE_MAX_WAIT_SECONDS in the stack, docs/aws.md). */
  maxWaitSeconds: AWS_MAX_WAIT_SECONDS,
  /** Monthly volume the fixed secret refreshes are spread over. */
  monthlyExecutions: 1_000_000,
  /**
   * CloudWatch Logs per event, bytes as ingested (a line plus its metadata): Lambda's own
   * START, END and REPORT lines per invocation, API Gateway's access log line per request, and
   * the state machine's events when its log level is ALL (an Express success path writes about
   * 16, with execution data: `stateMachineLogLevel=ALL`; at the default ERROR a success writes
   * none). The functions themselves write warnings and errors only: nothing on a success
   * (test/integration/handlers.test.ts, "writes no log line of its own"), so `lambdaOwn` is 0.
   */
  logBytes: { lambdaPlatform: 350, lambdaOwn: 0, accessLog: 500, stateMachineEvent: 375 },
  stateMachineEventsAll: 16,
  /**
   * X-Ray's default sampling rule records the first request each second and 5 % of the rest:
   * at the sustained load a million-a-month figure prices (≈ 0.4/s), nearly every request;
   * at hundreds a second, 5 %. A trace is an API request (through its Lambdas) or a state
   * machine execution (with its tasks); the runner's SQS-triggered invocations are traced too.
   */
  xraySampledShare: 0.05,
  /**
   * The web ACL's rules (lib/stacks/service-stack.ts): the payload guard, the two rate-based
   * rules, and two AWS managed rule groups (no subscription fee; $1 a month each, like a rule).
   * About 235 capacity units in all, inside the 1,500 the per-request price covers.
   */
  wafRules: 5,
  /**
   * CloudWatch alarms the stacks create (test/stack/service-stack.test.ts counts them): the
   * sweeper's errors, failed executions of each state machine, timed-out Express executions,
   * the API's 5xx, and each queue's dead-letter queue.
   */
  alarms: 7,
  /**
   * Empty receives a month of the Lambda pollers on each SQS event source when idle: five
   * pollers, each a 20 s long poll, three a minute (AWS starts five per event source).
   */
  pollerReceivesPerQueueMonth: 5 * 3 * 60 * 24 * 30,
  /** Queues with an event source (executions, callbacks). */
  polledQueues: 2,
  /** The sweeper: one pass a minute (lib/stacks/service-stack.ts), ≈ 100 ms at 256 MB, two Queries of ≤ 4 KB. */
  sweeperPassesPerMonth: 60 * 24 * 30,
  sweeperPassMs: 100,
  sweeperQueries: 2,
  /**
   * An execution's record as stored (≈ 1.2 KB with its node trace: the write counts above
   * assume ≤ 1 KB items, the trace can pass it), kept for the result retention (7 days) and
   * until DynamoDB's lazy TTL deletes it (assumed 2 days more), in the table and its
   * point-in-time backups.
   */
  executionRecordBytes: 1200,
  recordTtlLagDays: 2,
  /** Bytes out to the internet per answer of an API request (status line, headers, a small JSON body). */
  answerBytes: 600,
} as const;

/** Monthly volumes the bill is given at (docs/aws.md, the README's headline). */
export const BILL_VOLUMES = [10_000, 1_000_000, 100_000_000] as const;

export const TARGET_DOLLARS_PER_MILLION = 10;
/** The goal for a waiting caller of a trivial pipeline, everything the stack turns on included. */
export const ALL_IN_TARGET_DOLLARS = 12;

/**
 * A media execution as the cost model prices its objects: one image in through the uploads
 * route (a presigned PUT), checked on submit, read by the pipeline, one image out, fetched once.
 */
export interface MediaScenario {
  inputBytes: number;
  outputBytes: number;
  storedDays: number;
  puts: number;
  gets: number;
  downloads: number;
}

export const MEDIA: Readonly<MediaScenario> = {
  inputBytes: 1024 * 1024,
  outputBytes: 1024 * 1024,
  /** S3 Standard keeps every object until the lifecycle rule expires it: 8 to 9 days (lib/config.ts objectExpiryDays). */
  storedDays: 8.5,
  /** The caller's presigned PUT of the upload, and the output the run task stores. */
  puts: 2,
  /**
   * GET-class requests: the submit's HeadObject and GetObject of the upload (size, sniffing,
   * hash), the run task's GetObject of the input, and the download's GetObject of the output.
   */
  gets: 4,
  /** Downloads of the output (each out to the internet once). */
  downloads: 1,
};

/**
 * A map of render jobs as the cost model prices it (docs/aws.md, "Fan-out: the map node"): a
 * hundred items, four at a time, each job polled three times (the first poll at once after the
 * submit, the third finding it done), each request to the upstream about 50 ms.
 */
export interface MapScenario {
  items: number;
  concurrency: number;
  /** Polls each job takes, the one that finds it done included (1: done at the first). */
  pollsPerItem: number;
  /** How long one request to the upstream takes, ms (a step's requests run `concurrency` at once). */
  requestMs: number;
  /** A node record's size in the steps table, bytes (an item's value: a file's view, a short JSON). */
  recordBytes: number;
}
export const MAP_SCENARIO: MapScenario = { items: 100, concurrency: 4, pollsPerItem: 3, requestMs: 50, recordBytes: 500 };
/** A step's own time in task-run beyond its requests: the records' Query, the writes, the progress write. */
export const MAP_STEP_OVERHEAD_MS = 100;
/**
 * Step Functions Standard's history events per state: a Task is entered, scheduled, started,
 * succeeded and exited (5); a Choice and a Wait are entered and exited (2 each); a Map
 * iteration adds its started and succeeded events (2).
 */
export const HISTORY_EVENTS = { task: 5, choice: 2, wait: 2, mapIteration: 2 };
/** Step Functions quotas: events in one Standard execution's history; a state's input or output, bytes. */
export const SFN_QUOTAS = { historyEvents: 25_000, payloadBytes: 256 * 1024 };
