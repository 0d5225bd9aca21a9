/**
 * What a consumer key adds to a request (`npm run bench -- --only consumers`): the same routes
 * called with the deployment key and with a consumer key under a rate limit and a quota, one
 * request at a time against the local runtime (dynalite in memory), so the difference is the
 * added calls' own time: the authorizer's second read, the rate counter's conditional write,
 * and on execute the quota counter's and the usage count's. Prices come from the same counts
 * (`consumerKeyCost`), not from this machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRuntime } from '../lib/local/runtime';
import { CONSUMER_KEY_CALLS } from './aws-calls';
import { PRICES } from './prices';
import { fmt, summarize } from './stats';
import type { Row } from './table';

/** What the calls a consumer key with both limits adds cost (CONSUMER_KEY_CALLS; README, "Consumers"). */
export function consumerKeyCost() {
  const read = PRICES.dynamoPerMillionReadUnits;
  const write = PRICES.dynamoPerMillionWriteUnits;
  const { perRequest, perExecution } = CONSUMER_KEY_CALLS;
  const perMillionRequests = perRequest.reads * read + perRequest.writes * write;
  return {
    /** The consumer item's strongly consistent read (1 RRU) and the rate counter's write (1 WRU). */
    perMillionRequests,
    /** On top of the request's: the quota counter's write and the usage count (1 WRU each). */
    perMillionExecutions: perMillionRequests + perExecution.writes * write,
  };
}

export async function measureConsumers(log: (s: string) => void, samples = 300): Promise<Row[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-consumers-'));
  const rt = await startRuntime({ port: 0, dataDir, inMemory: true, log: false });
  try {
    const owner = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${rt.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${rt.ownerToken}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await res.json()) as Record<string, unknown>;
    };
    await owner('PUT', '/v1/pipelines/bench-consumers', {
      nodes: { name: { type: 'input', value_type: 'string', value: 'x' }, out: { type: 'output', from: 'name' } },
    });
    await owner('POST', '/v1/pipelines/bench-consumers/runs', {});
    for (let i = 0; i < 200; i++) {
      const published = await fetch(`${rt.url}/v1/pipelines/bench-consumers/deployment`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${rt.ownerToken}`, 'content-type': 'application/json' },
        body: '{}',
      });
      if (published.status === 201) {
        const dep = (await published.json()) as { deployment_id: string; api_key: string };
        const consumer = await owner('POST', '/v1/pipelines/bench-consumers/deployment/consumers', {
          name: 'bench',
          rate_limit: { requests: 1_000_000, per_seconds: 3600 },
          quota: { executions: 1_000_000, per: 'day' },
        });
        return await compare(rt.url, dep.deployment_id, dep.api_key, consumer.api_key as string, samples, log);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('could not publish the bench pipeline');
  } finally {
    await rt.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function compare(
  url: string,
  deploymentId: string,
  deploymentKey: string,
  consumerKey: string,
  samples: number,
  log: (s: string) => void,
): Promise<Row[]> {
  const time = async (method: string, path: string, key: string, status: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t = performance.now();
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      await res.arrayBuffer();
      if (res.status !== status) throw new Error(`${method} ${path}: ${res.status}`);
      out.push(performance.now() - t);
    }
    return out;
  };
  const rows: Row[] = [];
  const cost = consumerKeyCost();
  for (const [label, method, path, status, added] of [
    ['contract (a read)', 'GET', `/v1/deployments/${deploymentId}`, 200, cost.perMillionRequests],
    ['execute (accepted)', 'POST', `/v1/deployments/${deploymentId}/executions`, 202, cost.perMillionExecutions],
  ] as const) {
    log(`consumers: ${label}, ${samples} requests per key`);
    // Interleaved rounds, so a slower moment of the machine falls on both keys alike.
    const plain: number[] = [];
    const limited: number[] = [];
    for (let round = 0; round < 3; round++) {
      plain.push(...(await time(method, path, deploymentKey, status)));
      limited.push(...(await time(method, path, consumerKey, status)));
    }
    const a = summarize(plain);
    const b = summarize(limited);
    rows.push([`${label}: deployment key`, `p50 ${fmt(a.p50, 2)} ms · p90 ${fmt(a.p90, 2)} ms`, '—']);
    rows.push([
      `${label}: consumer key (rate + quota)`,
      `p50 ${fmt(b.p50, 2)} ms (+${fmt(b.p50 - a.p50, 2)}) · p90 ${fmt(b.p90, 2)} ms`,
      `+$${fmt(added, 3)} per million on AWS`,
    ]);
  }
  return rows;
}
