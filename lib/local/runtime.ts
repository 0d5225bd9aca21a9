/**
 * The whole service on one machine: the same handlers, the same state-machine document and
 * the same DynamoDB API (dynalite), with durable local queues. `npm start` runs it; the
 * end-to-end tests start and stop it through `startRuntime`.
 */
import './polyfills';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { objectExpiryDays, readConfig, type Config } from '../config';
import { QUEUES, type QueueName } from '../queues';
import { ROUTES, STREAMED_ROUTE_TIMEOUT_SECONDS } from '../routes';
import asl from '../state-machine.asl.json';
import { createDeps, type Deps } from '../../functions/adapters/deps';
import { InProcessCompletions } from '../../functions/adapters/completions';
import { createGuardedHttp } from '../../functions/adapters/guarded-http';
import { createLogger, errorFields, silentLogger, type Logger } from '../../functions/adapters/logger';
import { parseKeyMaterial, StaticKeyMaterial } from '../../functions/adapters/key-material';
import { KmsDataKeys } from '../../functions/adapters/kms';
import { LOCAL_OWNER_SECRETS_KEY, LocalKms, localKmsTransport } from './kms';
import { sweepOnce } from '../../functions/services/sweeper.service';
import { DataDirInUseError } from './data-dir-lock';
import { tableInput } from './dynamo';
import { createGateway } from './gateway';
import { createLambdaContext } from './lambda-context';
import { LocalQueue, LocalQueuePort } from './queue';
import { bootstrap, onRecordedPort, persistent, type Boot, type BootOptions, type Booted, type Wired } from './bootstrap';
import { startLocalS3, type LocalS3 } from './s3';
import { originOf, uploadCorsRule } from '../storage-cors';
import { createObjectStore } from '../../functions/adapters/objects.store';
import type { StopOptions, StopReport } from './shutdown';
import { LocalWorkflow, LocalWorkflows, type MachineType } from './workflow';
import { createHandler as authorizer } from '../../functions/authorizer/handler';
import { createHandler as runner } from '../../functions/runner/handler';
import { createHandler as callbackDispatch } from '../../functions/callback-dispatch/handler';
import { createHandler as taskStart } from '../../functions/task-start/handler';
import { createHandler as taskRun } from '../../functions/task-run/handler';
import { createHandler as taskFail } from '../../functions/task-fail/handler';
import { loadHandlers } from './handlers';

/** Host, port, data dir, owner token, env and inMemory as lib/local/bootstrap.ts takes them. */
export interface RuntimeOptions extends BootOptions {
  /** Queue tuning for tests (e.g. short visibility time-outs). */
  queueOverrides?: Partial<Record<QueueName, { visibilityTimeoutSeconds?: number; maxReceiveCount?: number }>>;
  /**
   * Index open executions (default). Only a measurement that mirrors AWS turns this off: a
   * restart then cannot find executions that were running.
   */
  trackOpen?: boolean;
  /** Swap any dependency (tests inject faults through this). */
  wrapDeps?: (d: Deps) => Deps;
  log?: Logger | false;
}

/** URL, owner token, data dir, drain time, what the start recovered and the stop: lib/local/bootstrap.ts. */
export interface Runtime extends Booted {
  /** The S3 emulation's endpoint (path-style; presigned URLs point here). */
  s3Url: string;
  deps: Deps;
  queues: { executions: LocalQueue; callbacks: LocalQueue };
  workflow: LocalWorkflows;
}

export { DataDirInUseError };
export type { StopOptions, StopReport };

const OBJECT_EXPIRY_INTERVAL_MS = 3600 * 1000;

/** The local S3 emulation's one access key id (its secret is the data dir's `s3-secret`). */
export const LOCAL_S3_ACCESS_KEY_ID = 'PIPEGATELOCALS3';

export async function startRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const { booted, wired } = await bootstrap(opts, '.pipegate', (boot) => wireLocal(opts, boot));
  return {
    ...booted,
    s3Url: wired.s3Url,
    deps: wired.deps,
    queues: wired.queues,
    workflow: wired.workflow,
  };
}

/** The service from the sources: the handlers in this process, the ASL as is, dynalite and S3 emulated. */
async function wireLocal(
  opts: RuntimeOptions,
  boot: Boot,
): Promise<Wired & { s3Url: string; queues: Runtime['queues']; workflow: LocalWorkflows }> {
  const { env, dataDir } = boot;
  const material = parseKeyMaterial(
    persistent(join(dataDir, 'secrets.json'), () =>
      JSON.stringify({ pepper: randomBytes(32).toString('base64url'), master_key: randomBytes(32).toString('base64') }),
    ),
  );

  const settings: Config = readConfig({
    PIPEGATE_ALLOW_PRIVATE_URLS: 'true',
    PIPEGATE_CANCEL_POLL_MS: '200',
    ...env,
    // Recovery at start reads the open executions.
    PIPEGATE_TRACK_OPEN: opts.trackOpen === false ? 'false' : 'true',
    AWS_REGION: 'local',
  });
  const log =
    opts.log === false
      ? silentLogger
      : (opts.log ?? createLogger('pipegate-local', undefined, settings.logFormat ?? (process.stdout.isTTY ? 'text' : 'json')));
  const dynamo = await boot.tables([tableInput(settings.table)], { inProcess: settings.dynamodbTransport === 'in-process' });
  // S3 on its own listener beside the API (same host): presigned upload URLs point at it. Its
  // one access key signs for every local function; the secret stays in the data dir.
  const s3Credentials = {
    accessKeyId: LOCAL_S3_ACCESS_KEY_ID,
    secretAccessKey: persistent(join(dataDir, 's3-secret'), () => randomBytes(30).toString('base64')),
  };
  // On the port it had last time (the data dir's `s3-port`) when free, so upload URLs handed
  // out before a restart still work after it.
  const s3: LocalS3 = await onRecordedPort(
    join(dataDir, 's3-port'),
    (port) =>
      startLocalS3({
        port,
        dir: join(dataDir, 'objects'),
        buckets: [settings.bucket],
        region: settings.region,
        secretOf: (id) => (id === s3Credentials.accessKeyId ? s3Credentials.secretAccessKey : undefined),
        // The lifecycle rule the stack gives the bucket on AWS, applied here by the emulation.
        expirationDays: { [settings.bucket]: objectExpiryDays(settings.resultRetentionDays) },
        // The upload rule the stack's upload-cors resource gives the bucket, for this runtime's own
        // origin (known once it listens) and the public URL's.
        cors: () => (config.formUploadOrigins.length > 0 ? [uploadCorsRule(...config.formUploadOrigins)] : []),
        host: opts.host ?? env.HOST ?? '127.0.0.1',
      }),
    (message) => log.warn(`S3 emulation: ${message}`),
  );
  boot.onStop(() => s3.stop());
  const config: Config = { ...settings, dynamodbEndpoint: dynamo.endpoint, s3Endpoint: s3.url, s3ForcePathStyle: true };

  const queue = (id: QueueName) =>
    new LocalQueue({
      dir: join(dataDir, 'queues'),
      name: id,
      visibilityTimeoutSeconds: opts.queueOverrides?.[id]?.visibilityTimeoutSeconds ?? QUEUES[id].visibilityTimeoutSeconds,
      maxReceiveCount: opts.queueOverrides?.[id]?.maxReceiveCount ?? QUEUES[id].maxReceiveCount,
      batchSize: QUEUES[id].batchSize,
      onError: (err: unknown) => log.error('queue consumer failed', { queue: id, ...errorFields(err) }),
    });
  const queues = { executions: queue('executions'), callbacks: queue('callbacks') };
  boot.onStop(() => queues.callbacks.stop());
  boot.onStop(() => queues.executions.stop());

  // Every function of this runtime reaches the same dependencies, built once below.
  const wired: { deps?: Deps } = {};
  const source = (): Deps => {
    if (!wired.deps) throw new Error('the local runtime invoked a function before its dependencies were built');
    return wired.deps;
  };
  // The one document as both state machines, each with its type's rules (lib/local/workflow.ts):
  // an execution runs on the one its version was given at push.
  const machine = (type: MachineType) =>
    new LocalWorkflow({
      definition: asl,
      type,
      tasks: {
        MarkRunning: taskStart(source),
        RunNodes: taskRun(source),
        MarkFailed: taskFail(source),
      },
      onError: (name, err) => log.error('workflow failed', { execution_id: name, state_machine: type, ...errorFields(err) }),
    });
  const workflow = new LocalWorkflows({ express: machine('EXPRESS'), standard: machine('STANDARD') });
  // Their task calls get a moment to return; anything still pending is queued again at the next start.
  boot.onStop(() => workflow.stopAll(2_000));

  const keyMaterial = new StaticKeyMaterial(material);
  // Owner secrets are sealed under a KMS key here too: the emulation keeps its material in the data dir.
  const kms = new LocalKms(join(dataDir, 'kms.json'));
  kms.define(LOCAL_OWNER_SECRETS_KEY);
  const built = createDeps(config, {
    queue: new LocalQueuePort({ executions: queues.executions, callbacks: queues.callbacks }),
    workflow,
    keyMaterial,
    dataKeys: new KmsDataKeys(localKmsTransport(kms), LOCAL_OWNER_SECRETS_KEY),
    http: createGuardedHttp({ allowPrivate: config.allowPrivateUrls }),
    objects: createObjectStore(config, config.bucket, s3Credentials),
    // Every function runs in this process, so the terminal write itself wakes waiting callers.
    completions: new InProcessCompletions(),
    log,
  });
  const d = opts.wrapDeps ? opts.wrapDeps(built) : built;
  wired.deps = d;

  // The sweeper's use case on a timer: lost messages, dead letters, runs past their deadline.
  boot.every(
    config.sweepIntervalSeconds * 1000,
    () => sweepOnce(d),
    (err) => log.error('sweeper pass failed', errorFields(err)),
  );
  // S3 runs a bucket's lifecycle expiry about daily; here a pass at start and every hour.
  boot.every(
    OBJECT_EXPIRY_INTERVAL_MS,
    async () => {
      const removed = await s3.expire();
      if (removed > 0) log.info('objects expired', { removed });
    },
    (err) => log.error('object expiry failed', errorFields(err)),
    { now: true },
  );

  const runnerFn = runner(source);
  const dispatchFn = callbackDispatch(source);
  const authorizerFn = authorizer(source);
  const gateway = createGateway({
    // Locally a `Prefer: wait` may last up to a minute, past API Gateway's 29 s: the routes
    // that wait get room for it (on AWS the wait is capped below 29 s instead).
    routes: ROUTES.map((r) => ({
      ...r,
      ...(r.waits ? { integrationTimeoutMs: Math.max(29_000, (config.maxWaitSeconds + 4) * 1000) } : {}),
      ...(r.streams ? { integrationTimeoutMs: STREAMED_ROUTE_TIMEOUT_SECONDS * 1000 } : {}),
    })),
    handlers: Object.fromEntries(Object.entries(loadHandlers()).map(([name, create]) => [name, create(source)])),
    authorizer: (event) => authorizerFn(event),
    ownerToken: boot.ownerToken,
    maxBodyBytes: config.maxBodyBytes,
    // Served under a prefix (e.g. /api behind a proxy): URLs in answers keep it.
    basePath: env.PIPEGATE_BASE_PATH,
    log: (line) => log.info('request', line),
  });

  return {
    deps: d,
    workflow,
    executionsQueue: queues.executions,
    drainSeconds: config.drainSeconds,
    // No repair: the store moves an execution onto the sweep index before its status (see
    // ExecutionsStore's markerFollowUp), so the sweep finds whatever a kill left open.
    start() {
      queues.executions.start((event: SQSEvent) => runnerFn(event, createLambdaContext('runner')) as Promise<SQSBatchResponse>);
      queues.callbacks.start((event: SQSEvent) => dispatchFn(event, createLambdaContext('callback-dispatch')) as Promise<SQSBatchResponse>);
    },
    handle: gateway,
    listening(url) {
      // Known only now: the loop guard's own URL (the functions read config when they run).
      config.apiUrl ??= url;
      config.formUploadOrigins = [...new Set([...config.formUploadOrigins, originOf(url)])];
    },
    say: (message, fields) => log.error(message, fields),
    s3Url: s3.url,
    queues,
  };
}
