/**
 * The whole service on one machine: the same handlers, the same state-machine document and
 * the same DynamoDB API (dynalite), with durable local queues. `npm start` runs it; the
 * end-to-end tests start and stop it through `startRuntime`.
 */
import './polyfills';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { readConfig, type Config } from '../config';
import { QUEUES, type QueueName } from '../queues';
import { ROUTES } from '../routes';
import asl from '../state-machine.asl.json';
import { releaseDeps, setDeps, storesFor, systemClock, randomIds, type Deps } from '../../functions/adapters/deps';
import { createGuardedHttp } from '../../functions/adapters/guarded-http';
import { createLogger, errorFields, silentLogger, type Logger } from '../../functions/adapters/logger';
import { parseKeyMaterial, StaticKeyMaterial } from '../../functions/adapters/key-material';
import { failInterrupted } from '../../functions/services/tasks.service';
import { ensureTable, startDynalite, type LocalDynamo } from './dynamo';
import { createGateway, createLambdaContext } from './gateway';
import { LocalQueue, LocalQueuePort } from './queue';
import { LocalWorkflow } from './workflow';
import { handler as authorizer } from '../../functions/authorizer/handler';
import { handler as runner } from '../../functions/runner/handler';
import { handler as callbackDispatch } from '../../functions/callback-dispatch/handler';
import { handler as taskStart } from '../../functions/task-start/handler';
import { handler as taskRun } from '../../functions/task-run/handler';
import { handler as taskFail } from '../../functions/task-fail/handler';
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
  deps: Deps;
  queues: { executions: LocalQueue; callbacks: LocalQueue };
  workflow: LocalWorkflow;
  recovered: { resumed: number; interrupted: number; callbacks: number };
  stop(): Promise<void>;
}

/** Reads a file of the data dir, creating it (mode 0600) on first use. */
function persistent(path: string, create: () => string): string {
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return value;
}

export class DataDirInUseError extends Error {}

/**
 * One runtime per data dir: a second one would share the database files and queues. A pid
 * file whose process is gone (killed, crashed) is taken over.
 */
function claimDataDir(dataDir: string): () => void {
  const pidFile = join(dataDir, 'runtime.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new DataDirInUseError(`The data dir ${dataDir} is in use by another pipegate (process ${pid}). Stop it, or set PIPEGATE_DATA_DIR to another folder.`);
    }
  }
  writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  return () => rmSync(pidFile, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}

export async function startRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const env = opts.env ?? process.env;
  const dataDir = resolve(opts.dataDir ?? env.PIPEGATE_DATA_DIR ?? '.pipegate');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const releaseDataDir = claimDataDir(dataDir);
  const log = opts.log === false ? silentLogger : (opts.log ?? createLogger('pipegate-local'));

  const ownerToken =
    opts.ownerToken ?? env.PIPEGATE_OWNER_TOKEN ?? persistent(join(dataDir, 'owner-token'), () => `pgo_${randomBytes(24).toString('base64url')}`);
  const material = parseKeyMaterial(
    persistent(join(dataDir, 'secrets.json'), () =>
      JSON.stringify({ pepper: randomBytes(32).toString('base64url'), master_key: randomBytes(32).toString('base64') }),
    ),
  );

  const dynamo: LocalDynamo = await startDynalite(opts.inMemory ? {} : { path: join(dataDir, 'db') });
  const config: Config = readConfig({
    PIPEGATE_ALLOW_PRIVATE_URLS: 'true',
    PIPEGATE_CANCEL_POLL_MS: '200',
    ...env,
    PIPEGATE_DYNAMODB_ENDPOINT: dynamo.endpoint,
    // Recovery at start reads the open executions.
    PIPEGATE_TRACK_OPEN: opts.trackOpen === false ? 'false' : 'true',
    AWS_REGION: 'local',
  });
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

  const invoke = (name: string, fn: (event: never, ctx: Context) => Promise<unknown>) => (input: unknown) =>
    fn(input as never, createLambdaContext(name));
  const workflow = new LocalWorkflow({
    definition: asl,
    tasks: {
      MarkRunning: invoke('task-start', taskStart as never),
      RunNodes: invoke('task-run', taskRun as never),
      MarkFailed: invoke('task-fail', taskFail as never),
    },
    onError: (name, err) => log.error('workflow failed', { execution_id: name, ...errorFields(err) }),
  });

  let d: Deps = {
    config,
    ...storesFor(config),
    queue: new LocalQueuePort({ executions: queues.executions, callbacks: queues.callbacks }),
    workflow,
    keyMaterial: new StaticKeyMaterial(material),
    http: createGuardedHttp({ allowPrivate: config.allowPrivateUrls }),
    clock: systemClock,
    ids: randomIds,
    log,
  };
  if (opts.wrapDeps) d = opts.wrapDeps(d);
  setDeps(d);

  // Recovery before anything new arrives: nothing accepted is ever lost. The items are read
  // (not the sweep index), since a kill can leave dynalite's index behind its items.
  const recovered = { resumed: 0, interrupted: 0, callbacks: 0 };
  for (const e of await d.executions.scanUnfinished()) {
    if (e.status === 'pending') {
      await d.queue.send('executions', { execution_id: e.execution_id });
      recovered.resumed++;
    } else if (e.status === 'running') {
      await failInterrupted(d, e);
      recovered.interrupted++;
    } else if (e.callback_delivery?.outcome === 'pending') {
      const due = e.callback_delivery.next_attempt_at ? Date.parse(e.callback_delivery.next_attempt_at) : undefined;
      await d.queue.send('callbacks', { execution_id: e.execution_id, ...(due ? { due_at: due } : {}) });
      recovered.callbacks++;
    }
  }

  queues.executions.start((event: SQSEvent) => runner(event, createLambdaContext('runner')) as Promise<SQSBatchResponse>);
  queues.callbacks.start((event: SQSEvent) => callbackDispatch(event, createLambdaContext('callback-dispatch')) as Promise<SQSBatchResponse>);

  const server: Server = createServer(
    createGateway({
      routes: ROUTES,
      handlers: HTTP_HANDLERS,
      authorizer: (event) => authorizer(event),
      ownerToken,
      maxBodyBytes: config.maxBodyBytes,
      // Served under a prefix (e.g. /api behind a proxy): URLs in answers keep it.
      basePath: env.PIPEGATE_BASE_PATH,
      log: (line) => log.info('request', line),
    }),
  );
  const host = opts.host ?? env.HOST ?? '127.0.0.1';
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? Number(env.PORT ?? 3000), host, () => res());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  let stopped = false;
  return {
    url,
    ownerToken,
    dataDir,
    deps: d,
    queues,
    workflow,
    recovered,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await new Promise<void>((res) => {
        server.close(() => res());
        server.closeAllConnections();
      });
      await Promise.all([queues.executions.stop(), queues.callbacks.stop()]);
      // In-flight runs get a moment to record their outcome; whatever is left is finished as
      // interrupted by the next start.
      await workflow.stopAll(2_000);
      await dynamo.close();
      releaseDataDir();
      releaseDeps(d);
    },
  };
}
