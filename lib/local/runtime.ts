/**
 * The whole service on one machine: the same handlers, the same state-machine document and
 * the same DynamoDB API (dynalite), with durable local queues. `npm start` runs it; the
 * end-to-end tests start and stop it through `startRuntime`.
 */
import './polyfills';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { objectExpiryDays, readConfig, type Config } from '../config';
import { QUEUES, type QueueName } from '../queues';
import { ROUTES, STREAMED_ROUTE_TIMEOUT_SECONDS } from '../routes';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import asl from '../state-machine.asl.json';
import { createDeps, type Deps } from '../../functions/adapters/deps';
import { InProcessCompletions } from '../../functions/adapters/completions';
import { createGuardedHttp } from '../../functions/adapters/guarded-http';
import { createLogger, errorFields, silentLogger, type Logger } from '../../functions/adapters/logger';
import { parseKeyMaterial, StaticKeyMaterial } from '../../functions/adapters/key-material';
import { KmsDataKeys } from '../../functions/adapters/kms';
import { LOCAL_OWNER_SECRETS_KEY, LocalKms, localKmsTransport } from './kms';
import { sweepAll, sweepOnce } from '../../functions/services/sweeper.service';
import { DataDirInUseError, lockDataDir, type DataDirLock } from './data-dir-lock';
import { ensureTable, startDynalite, type LocalDynamo } from './dynamo';
import { createGateway, createLocalServer } from './gateway';
import { createLambdaContext } from './lambda-context';
import { LocalQueue, LocalQueuePort } from './queue';
import { listen, onRecordedPort, ownerTokenOf, persistent, recoveredOf, type Recovered } from './bootstrap';
import { startLocalS3, type LocalS3 } from './s3';
import { originOf, uploadCorsRule } from '../storage-cors';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { drainWorkflow, refuseWhileStopping, type StopOptions, type StopReport } from './shutdown';
import { LocalWorkflow } from './workflow';
import { createHandler as authorizer } from '../../functions/authorizer/handler';
import { createHandler as runner } from '../../functions/runner/handler';
import { createHandler as callbackDispatch } from '../../functions/callback-dispatch/handler';
import { createHandler as taskStart } from '../../functions/task-start/handler';
import { createHandler as taskRun } from '../../functions/task-run/handler';
import { createHandler as taskFail } from '../../functions/task-fail/handler';
import { HTTP_HANDLERS } from './handlers';

export interface RuntimeOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  dataDir?: string;
  ownerToken?: string;
  /** Environment to read configuration from (defaults to process.env). */
  env?: Record<string, string | undefined>;
  /** Keep DynamoDB in memory instead of on disk under the data dir (tests). */
  inMemory?: boolean;
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

export interface Runtime {
  url: string;
  ownerToken: string;
  dataDir: string;
  /** The S3 emulation's endpoint (path-style; presigned URLs point here). */
  s3Url: string;
  /** PIPEGATE_DRAIN_SECONDS: how long a stop waits for running executions. */
  drainSeconds: number;
  deps: Deps;
  queues: { executions: LocalQueue; callbacks: LocalQueue };
  workflow: LocalWorkflow;
  recovered: Recovered;
  /**
   * Stops accepting (every request answers 503 + Retry-After), lets running executions finish
   * for up to `drainMs` (PIPEGATE_DRAIN_SECONDS by default), then fails the rest as interrupted.
   */
  stop(opts?: StopOptions): Promise<StopReport>;
}

export { DataDirInUseError };
export type { StopOptions, StopReport };

const OBJECT_EXPIRY_INTERVAL_MS = 3600 * 1000;

/** The local S3 emulation's one access key id (its secret is the data dir's `s3-secret`). */
export const LOCAL_S3_ACCESS_KEY_ID = 'PIPEGATELOCALS3';

export async function startRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const env = opts.env ?? process.env;
  const dataDir = resolve(opts.dataDir ?? env.PIPEGATE_DATA_DIR ?? '.pipegate');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const dataDirLock = await lockDataDir(dataDir);
  try {
    // Left by versions that guarded the data dir with a pid file.
    rmSync(join(dataDir, 'runtime.pid'), { force: true });
    return await startLocked(opts, env, dataDir, dataDirLock);
  } catch (e) {
    await dataDirLock.release();
    throw e;
  }
}

async function startLocked(
  opts: RuntimeOptions,
  env: Record<string, string | undefined>,
  dataDir: string,
  dataDirLock: DataDirLock,
): Promise<Runtime> {
  const ownerToken =
    ownerTokenOf(opts.ownerToken, env, dataDir);
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
    opts.log === false ? silentLogger : (opts.log ?? createLogger('pipegate-local', undefined, settings.logFormat ?? (process.stdout.isTTY ? 'text' : 'json')));
  const dynamo: LocalDynamo = await startDynalite({
    ...(opts.inMemory ? {} : { path: join(dataDir, 'db') }),
    inProcess: settings.dynamodbTransport === 'in-process',
  });
  // S3 on its own listener beside the API (same host): presigned upload URLs point at it. Its
  // one access key signs for every local function; the secret stays in the data dir.
  const s3Credentials = {
    accessKeyId: LOCAL_S3_ACCESS_KEY_ID,
    secretAccessKey: persistent(join(dataDir, 's3-secret'), () => randomBytes(30).toString('base64')),
  };
  // On the port it had last time (the data dir's `s3-port`) when free, so upload URLs handed
  // out before a restart still work after it.
  const s3: LocalS3 = await onRecordedPort(join(dataDir, 's3-port'), (port) => startLocalS3({
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
  }));
  const config: Config = { ...settings, dynamodbEndpoint: dynamo.endpoint, s3Endpoint: s3.url, s3ForcePathStyle: true };
  await ensureTable(dynamo.endpoint, config.table);

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

  // Every function of this runtime reaches the same dependencies, built once below.
  const wired: { deps?: Deps } = {};
  const source = (): Deps => {
    if (!wired.deps) throw new Error('the local runtime invoked a function before its dependencies were built');
    return wired.deps;
  };
  const workflow = new LocalWorkflow({
    definition: asl,
    tasks: {
      MarkRunning: taskStart(source),
      RunNodes: taskRun(source),
      MarkFailed: taskFail(source),
    },
    onError: (name, err) => log.error('workflow failed', { execution_id: name, ...errorFields(err) }),
  });

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

  // Recovery before anything new arrives: nothing accepted is ever lost. The sweeper reads the
  // sweep index, which covers every open item here (see ExecutionsStore's markerFollowUp), so
  // the start-up costs what is open, not what is retained.
  const swept = await sweepAll(d, { startup: true });
  const recovered = recoveredOf(swept);

  // Then the same use case on a timer: lost messages, dead letters, runs past their deadline.
  let sweeping: Promise<unknown> | undefined;
  const sweepTimer = setInterval(() => {
    sweeping ??= sweepOnce(d)
      .catch((err: unknown) => log.error('sweeper pass failed', errorFields(err)))
      .finally(() => (sweeping = undefined));
  }, config.sweepIntervalSeconds * 1000);
  sweepTimer.unref();

  // S3 runs a bucket's lifecycle expiry about daily; here a pass at start and every hour.
  let expiring: Promise<unknown> | undefined;
  const expireObjects = () => {
    expiring ??= s3
      .expire()
      .then((removed) => removed > 0 && log.info('objects expired', { removed }))
      .catch((err: unknown) => log.error('object expiry failed', errorFields(err)))
      .finally(() => (expiring = undefined));
  };
  expireObjects();
  const expiryTimer = setInterval(expireObjects, OBJECT_EXPIRY_INTERVAL_MS);
  expiryTimer.unref();

  const runnerFn = runner(source);
  const dispatchFn = callbackDispatch(source);
  const authorizerFn = authorizer(source);
  queues.executions.start((event: SQSEvent) => runnerFn(event, createLambdaContext('runner')) as Promise<SQSBatchResponse>);
  queues.callbacks.start((event: SQSEvent) => dispatchFn(event, createLambdaContext('callback-dispatch')) as Promise<SQSBatchResponse>);

  // While stopping: every request is told to come back (503 + Retry-After), so nothing new is accepted.
  let draining = false;
  const gateway = createGateway({
      // Locally a `Prefer: wait` may last up to a minute, past API Gateway's 29 s: the routes
      // that wait get room for it (on AWS the wait is capped below 29 s instead).
      routes: ROUTES.map((r) => ({
        ...r,
        ...(r.waits ? { integrationTimeoutMs: Math.max(29_000, (config.maxWaitSeconds + 4) * 1000) } : {}),
        ...(r.inlineAssets ? { maxBodyBytes: INLINE_ASSET_BODY_MAX_BYTES } : {}),
        ...(r.streams ? { integrationTimeoutMs: STREAMED_ROUTE_TIMEOUT_SECONDS * 1000 } : {}),
      })),
      handlers: Object.fromEntries(Object.entries(HTTP_HANDLERS).map(([name, create]) => [name, create(source)])),
      authorizer: (event) => authorizerFn(event),
      ownerToken,
      maxBodyBytes: config.maxBodyBytes,
      // Served under a prefix (e.g. /api behind a proxy): URLs in answers keep it.
      basePath: env.PIPEGATE_BASE_PATH,
      log: (line) => log.info('request', line),
  });
  const server: Server = createLocalServer((req, res) => {
    if (!draining) return gateway(req, res);
    refuseWhileStopping(req, res);
  });
  const { url, forgetUrl } = await listen(server, opts, env, dataDir);
  // Known only now: the loop guard's own URL (the functions read config when they run).
  config.apiUrl ??= url;
  config.formUploadOrigins = [...new Set([...config.formUploadOrigins, originOf(url)])];

  let stopping: Promise<StopReport> | undefined;
  const stop = async (stopOpts: StopOptions = {}): Promise<StopReport> => {
    const drainMs = stopOpts.drainMs ?? config.drainSeconds * 1000;
    draining = true;
    clearInterval(sweepTimer);
    clearInterval(expiryTimer);
    // Whatever step fails, the data dir is let go: a stop that threw must not leave the next
    // start (or a supervisor's restart) waiting on a lock nobody holds any more.
    try {
      await sweeping;
      await expiring;
      // No new workflow starts; their messages wait in the queue for the next start.
      await queues.executions.stop();
      const report = await drainWorkflow(workflow, d, drainMs, (id, err) => log.error('could not fail an interrupted execution', { execution_id: id, ...errorFields(err) }));
      // Their task calls get a moment to return; anything still pending is queued again at the next start.
      await workflow.stopAll(2_000);
      await queues.callbacks.stop();
      await new Promise<void>((res) => {
        server.close(() => res());
        server.closeAllConnections();
      });
      await dynamo.close();
      await s3.stop();
      return report;
    } finally {
      forgetUrl();
      await dataDirLock.release();
    }
  };
  return {
    url,
    ownerToken,
    dataDir,
    s3Url: s3.url,
    drainSeconds: config.drainSeconds,
    deps: d,
    queues,
    workflow,
    recovered,
    stop: (stopOpts) => (stopping ??= stop(stopOpts)),
  };
}
