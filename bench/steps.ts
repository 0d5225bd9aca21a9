/**
 * What checkpointing costs a node, locally (`npm run bench -- --only steps`): one pipeline of N
 * http nodes in a chain, each calling a local HTTP server, run by the step engine with its
 * journal on dynalite (every call recorded before it is made and when it finishes, through the
 * steps store task-run records with: functions/adapters/steps.store.ts), against the in-memory
 * engine (runPipeline with a MemoryJournal, as before checkpoints), in one run of this process.
 * The runs alternate, after a warm-up of each; the figure is the median run divided by N.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createDocumentClient } from '../functions/adapters/dynamo';
import { createGuardedHttp } from '../functions/adapters/guarded-http';
import { StepsStore } from '../functions/adapters/steps.store';
import { runPipeline, runStep, type Journal } from '../functions/core/engine';
import { validateDefinition } from '../functions/core/pipeline';
import type { ObjectStorePort, StepOwner } from '../functions/core/ports';
import type { PipelineDefinition } from '../functions/core/types';
import { ensureTable, startDynalite } from '../lib/local/dynamo';
import { fmt, median } from './stats';
import type { Row } from './table';

export interface StepsFigure {
  nodes: number;
  runs: number;
  /** By method: a GET is safe to repeat, so only its value is recorded; a POST is recorded before it is sent too. */
  methods: {
    method: 'GET' | 'POST';
    /** Median run, ms, of each engine. */
    memoryMs: number;
    journalMs: number;
    /** Journal writes per node. */
    savesPerNode: number;
  }[];
}

/** A chain of `n` http nodes, each reading the one before, between one input and one output. */
export function httpChain(n: number, url: string, method: 'GET' | 'POST' = 'GET'): PipelineDefinition {
  const nodes: Record<string, unknown> = { seed: { type: 'input', value_type: 'string', value: 'x' } };
  for (let i = 1; i <= n; i++) {
    const from = i === 1 ? 'seed' : `h${i - 1}`;
    nodes[`h${i}`] = { type: 'http', method, url, inputs: [from], ...(method === 'POST' ? { body: `{'v': ${from}}` } : {}) };
  }
  nodes.out = { type: 'output', from: `h${n}` };
  const checked = validateDefinition({ nodes });
  if (!checked.ok) throw new Error(`the bench pipeline is invalid: ${JSON.stringify(checked.problems)}`);
  return checked.definition;
}

export async function measureSteps(log: (m: string) => void, opts: { nodes?: number; runs?: number } = {}): Promise<StepsFigure> {
  const n = opts.nodes ?? 40;
  const runs = opts.runs ?? 15;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('"ok"');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`;
  // The local runtime's own DynamoDB: dynalite in memory, reached in this process.
  const dynamo = await startDynalite({ inProcess: true });
  const table = 'pipegate-bench-steps';
  await ensureTable(dynamo.endpoint, table);
  const client = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
  const noObjects = (): ObjectStorePort => {
    throw new Error('a node value of this bench never leaves its item');
  };
  const steps = new StepsStore(client, table, noObjects);
  const http = createGuardedHttp({ allowPrivate: true });
  let saves = 0;

  const inMemory = async (def: PipelineDefinition): Promise<number> => {
    const t0 = performance.now();
    const r = await runPipeline(def, {}, { http, timeoutMs: 600_000, executionId: randomUUID() });
    if (r.status !== 'completed') throw new Error(`in-memory run ${r.status}`);
    return performance.now() - t0;
  };
  const journaled = async (def: PipelineDefinition): Promise<number> => {
    const owner: StepOwner = { execution_id: randomUUID(), kind: 'run', deployment_id: null, pipeline_id: 'bench', expires_at: null };
    const t0 = performance.now();
    const journal: Journal = {
      nodes: await steps.load(owner),
      save: (id, rec, prev, sawEvent) => {
        saves += 1;
        return steps.save(owner, id, rec, prev, sawEvent ?? false);
      },
    };
    const { result } = await runStep(def, {}, { http, timeoutMs: 600_000, executionId: owner.execution_id, journal });
    if (result.status !== 'completed') throw new Error(`journaled run ${result.status}`);
    return performance.now() - t0;
  };

  try {
    const methods: StepsFigure['methods'] = [];
    for (const method of ['GET', 'POST'] as const) {
      const def = httpChain(n, url, method);
      log(`steps: ${n} http ${method} nodes in a chain, warming up`);
      for (let i = 0; i < 3; i++) {
        await inMemory(def);
        await journaled(def);
      }
      saves = 0;
      const memory: number[] = [];
      const journal: number[] = [];
      log(`steps: ${runs} runs of each, alternating`);
      for (let i = 0; i < runs; i++) {
        memory.push(await inMemory(def));
        journal.push(await journaled(def));
      }
      methods.push({ method, memoryMs: median(memory), journalMs: median(journal), savesPerNode: saves / runs / n });
    }
    return { nodes: n, runs, methods };
  } finally {
    client.destroy();
    await dynamo.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export function stepsRows(f: StepsFigure): [Row, Row[]] {
  const per = (ms: number) => ms / f.nodes;
  const rows: Row[] = [];
  for (const m of f.methods) {
    rows.push(
      [`${m.method}: in memory (runPipeline, MemoryJournal)`, fmt(per(m.memoryMs), 2), fmt(m.memoryMs, 1), '1.00'],
      [
        `${m.method}: steps, journal on dynalite (${fmt(m.savesPerNode, 1)} writes a node)`,
        fmt(per(m.journalMs), 2),
        fmt(m.journalMs, 1),
        fmt(m.journalMs / m.memoryMs, 2),
      ],
      [`${m.method}: checkpointing alone`, fmt(per(m.journalMs - m.memoryMs), 2), fmt(m.journalMs - m.memoryMs, 1), ''],
    );
  }
  return [['engine', `ms per node (median of ${f.runs} runs of ${f.nodes} http nodes)`, 'per run, ms', '÷ in memory'], rows];
}
