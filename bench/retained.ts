/**
 * Start-up and one sweeper pass with a long retained history against an empty one: both must
 * cost what is open, not what is kept, because the sweeper reads only the sparse `sweep` index.
 * The history is written straight into the data dir's dynalite (BatchWriteItem, before the
 * runtime starts); a Scan of the same table is timed beside them, for what reading the history
 * would cost.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { create, createKey, getIndexActions, type BatchOp, type TableDescription } from 'dynalite/db';
import { readConfig } from '../lib/config';
import { ensureTable, startDynalite } from '../lib/local/dynamo';
import { startRuntime } from '../lib/local/runtime';
import { keys, localEndpointConfig } from '../functions/adapters/dynamo';
import { sweepOnce } from '../functions/services/sweeper.service';

export interface RetainedFigure {
  retained: number;
  /** Writing the history, before any start. */
  seedMs: number;
  /** startRuntime until it listens, the start-up sweep included, per start. */
  startupMs: number[];
  /** One sweeper pass (sweepOnce), per pass. */
  sweepMs: number[];
  /** Index entries the passes looked at, in all. */
  sweepExamined: number;
  /** One Scan of the whole table, for contrast (what reading the history costs). */
  scanMs: number;
  scanItems: number;
}

const client = (endpoint: string) => new DynamoDBClient({ region: 'local', maxAttempts: 10, ...localEndpointConfig(endpoint) });

/** A finished API execution as the functions leave it: terminal, no sweep marker, on its deployment's list. */
function finishedItem(deploymentId: string, i: number, now: number): Record<string, unknown> {
  const id = randomUUID();
  const created = new Date(now - 30 * 24 * 3600 * 1000 + i * 1000).toISOString();
  const done = new Date(Date.parse(created) + 40).toISOString();
  return {
    ...keys.execution(id),
    execution_id: id,
    kind: 'api',
    pipeline_id: 'greeting',
    version: 1,
    deployment_id: deploymentId,
    status: i % 50 === 0 ? 'failed' : 'completed',
    inputs: { name: `caller ${i}` },
    outputs: { message: `Hello, caller ${i}!` },
    visible_outputs: ['message'],
    callback: i % 4 === 0 ? 'https://hooks.example.com/pipegate' : null,
    callback_delivery:
      i % 4 === 0
        ? {
            webhook_id: `msg_${id}`,
            attempts: 1,
            outcome: 'delivered',
            last_attempt_at: done,
            next_attempt_at: null,
            last_status: 204,
            last_error: null,
          }
        : null,
    error_message: i % 50 === 0 ? 'Node "greeting" failed: an example failure' : null,
    created_at: created,
    started_at: created,
    completed_at: done,
    // Far in the future: retained, never treated as expired.
    expires_at: Math.floor(now / 1000) + 365 * 24 * 3600,
    dep_pk: `EXECS#${deploymentId}`,
    dep_sk: `${created}#${id}`,
  };
}

/**
 * Writes `n` finished executions into the data dir's table with dynalite's own key and index
 * functions, in LevelDB batches of 1,000 items, in this process and without HTTP (the table is
 * created first the ordinary way), so 100,000 take seconds rather than minutes. Each item and
 * each of its index entries is stored exactly as a PutItem of a new item stores it.
 */
async function seed(dataDir: string, table: string, n: number): Promise<{ ms: number; sampleId?: string }> {
  const began = performance.now();
  const dynamo = await startDynalite({ path: join(dataDir, 'db') });
  try {
    await ensureTable(dynamo.endpoint, table);
  } finally {
    await dynamo.close();
  }
  const store = create({ path: join(dataDir, 'db') });
  const call = <T>(fn: (cb: (err: Error | null | undefined, v?: T) => void) => void) =>
    new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))));
  try {
    const description = await call<TableDescription>((cb) => store.getTable(table, cb));
    const deployments = Array.from({ length: 20 }, () => randomUUID());
    const now = Date.now();
    let sampleId: string | undefined;
    for (let from = 0; from < n; from += 1000) {
      const items: BatchOp[] = [];
      const indexes = new Map<string, BatchOp[]>();
      for (let i = from; i < Math.min(n, from + 1000); i += 1) {
        const plain = finishedItem(deployments[i % deployments.length] ?? '', i, now);
        sampleId ??= String(plain.execution_id);
        const item = marshall(plain);
        items.push({ type: 'put', key: createKey(item, description), value: item });
        for (const a of getIndexActions(description.GlobalSecondaryIndexes ?? [], null, item, description).puts) {
          indexes.set(a.index, [...(indexes.get(a.index) ?? []), { type: 'put', key: a.key, value: a.item }]);
        }
      }
      await call<void>((cb) => store.getItemDb(table).batch(items, cb));
      for (const [index, ops] of indexes) await call<void>((cb) => store.getIndexDb('Global', table, index).batch(ops, cb));
    }
    return { ms: performance.now() - began, ...(sampleId ? { sampleId } : {}) };
  } finally {
    await new Promise<void>((resolve) => store.db.close(() => resolve()));
  }
}

async function scanAll(dataDir: string, table: string): Promise<{ ms: number; items: number }> {
  const dynamo = await startDynalite({ path: join(dataDir, 'db') });
  const db = client(dynamo.endpoint);
  try {
    const began = performance.now();
    let items = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await db.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
      items += page.Items?.length ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return { ms: performance.now() - began, items };
  } finally {
    db.destroy();
    await dynamo.close();
  }
}

/** Seeds a data dir with `retained` finished executions, then times starts, sweeper passes and a Scan. */
export async function measureRetained(retained: number, opts: { starts?: number; passes?: number } = {}): Promise<RetainedFigure> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-retained-'));
  // The sweeper's own timer stays out of the way: the passes below are the ones timed.
  const env = { ...process.env, PIPEGATE_SWEEP_INTERVAL_SECONDS: '3600', PIPEGATE_DATA_DIR: dataDir };
  const table = readConfig(env).table;
  try {
    const seeded = await seed(dataDir, table, retained);
    const startupMs: number[] = [];
    const sweepMs: number[] = [];
    let sweepExamined = 0;
    for (let s = 0; s < (opts.starts ?? 3); s += 1) {
      const began = performance.now();
      const rt = await startRuntime({ dataDir, port: 0, log: false, env });
      startupMs.push(performance.now() - began);
      try {
        // The history is there for the functions as they read it, not only on disk.
        if (seeded.sampleId && !(await rt.deps.executions.get(seeded.sampleId, new Date(), true))) {
          throw new Error('a seeded execution cannot be read through the store');
        }
        for (let p = 0; p < (opts.passes ?? 10); p += 1) {
          const t = performance.now();
          const r = await sweepOnce(rt.deps);
          sweepMs.push(performance.now() - t);
          sweepExamined += r.examined;
        }
      } finally {
        await rt.stop({ drainMs: 0 });
      }
    }
    const scan = await scanAll(dataDir, table);
    return { retained, seedMs: seeded.ms, startupMs, sweepMs, sweepExamined, scanMs: scan.ms, scanItems: scan.items };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
