/**
 * The owner who hears "my request failed", end to end through the CLI (spawned as real
 * processes against a started local runtime): finds the execution by listing, shows its trace
 * with the failing node and the reason, sees the callback attempts, redelivers the callback
 * (same webhook-id), cancels a running execution, reads usage; and `run` prints the run id
 * before it waits, and Ctrl-C during the wait says how to follow up and how to cancel.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { runCli, type CliOptions, type CliRun } from '../support/cli';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestRuntime, waitUntil, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let receiver: Receiver;
let upstream: Server;
let upstreamUrl: string;
/** How the upstream answers: a quote, a 502 with a body, or never (the request hangs). */
let mode: 'ok' | 'broken' | 'hang' = 'ok';
let cwd: string;

function pg(args: string[], onStderr?: CliOptions['onStderr']): Promise<CliRun> {
  return runCli(args, { cwd, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken }, ...(onStderr ? { onStderr } : {}) });
}

const parse = <T>(d: CliRun): T => {
  if (d.code !== 0) throw new Error(`exit ${d.code}\nstdout:\n${d.stdout}\nstderr:\n${d.stderr}`);
  return JSON.parse(d.stdout) as T;
};

const quote: PipelineDefinition = {
  description: 'Asks a rates API for a price',
  nodes: {
    destination: { type: 'input', value_type: 'string', value: 'FR' },
    code: { type: 'transform', inputs: ['destination'], expression: '$uppercase(destination)' },
    rates: { type: 'http', method: 'POST', url: 'http://placeholder/', inputs: ['code'], body: "{ 'to': code }", timeout_ms: 20_000 },
    price: { type: 'transform', inputs: ['rates'], expression: 'rates.price' },
    amount: { type: 'output', from: 'price' },
  },
};

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'pipegate-owner-story-'));
  upstream = createServer((req, res) => {
    req.resume();
    if (mode === 'hang') return; // answered by nobody: the execution stays running
    if (mode === 'broken') {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"error":"rates backend down for maintenance"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"price":12.75}');
  });
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', () => ok()));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/quote`;
  receiver = await startReceiver(1); // every callback answered 500 until told otherwise
  // Two attempts (the first and one retry at once), then dead-lettered.
  rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0', PIPEGATE_CANCEL_POLL_MS: '50' } });
});

afterAll(async () => {
  await rt?.cleanup();
  await receiver?.close();
  upstream?.closeAllConnections();
  await new Promise((ok) => upstream?.close(ok));
  rmSync(cwd, { recursive: true, force: true });
});

it('finds a failed execution, shows where and why it failed and its callback attempts, redelivers, cancels a running one', async () => {
  // Prepare: a live API, one good execution, then the rates API breaks and a caller's request fails.
  mode = 'ok';
  const p = await rt.publishPipeline('quotes', {
    ...quote,
    nodes: { ...quote.nodes, rates: { ...quote.nodes.rates, url: upstreamUrl } as PipelineDefinition['nodes'][string] },
  });
  const good = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
  await rt.waitForExecution(good.body.execution_id as string, p.apiKey);
  mode = 'broken';
  const bad = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback: receiver.url });
  const badId = bad.body.execution_id as string;
  await rt.waitForExecution(badId, p.apiKey);
  await waitUntil(
    () => rt.owner('GET', `/v1/pipelines/quotes/executions/${badId}`),
    (r) => (r.body.callback_delivery as { outcome?: string } | null)?.outcome === 'dead_lettered',
  );

  // Act 1: list the failed ones, as a table and as JSON.
  const table = await pg(['executions', 'quotes', '--status', 'failed']);
  const listed = parse<{ executions: { execution_id: string; status: string; callback: { outcome: string; attempts: number } | null }[] }>(
    await pg(['executions', 'quotes', '--status', 'failed', '--json']),
  );

  // Assess 1
  expect(table.code).toBe(0);
  expect(table.stdout).toContain(badId);
  expect(table.stdout).toContain('dead_lettered ×2 500');
  expect(table.stdout).toContain('HTTP 502');
  expect(listed.executions.map((e) => e.execution_id)).toEqual([badId]);
  expect(listed.executions[0]?.callback).toMatchObject({ outcome: 'dead_lettered', attempts: 2 });

  // Act 2: show it.
  const shown = await pg(['show', 'quotes', badId]);
  const view = parse<{
    failed_node: { node: string; http_status: number; error: string };
    trace: { node: string; outcome: string; duration_ms: number | null }[];
    callback_delivery: { webhook_id: string; log: { status: number }[] };
  }>(await pg(['show', 'quotes', badId, '--json']));

  // Assess 2: the failing node, its reason (the upstream's status and body), the other nodes, the attempts.
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/failed at rates \(HTTP 502\): .*rates backend down for maintenance/);
  expect(shown.stdout).toMatch(/code\s+transform\s+completed/);
  expect(shown.stdout).toMatch(/amount\s+output\s+not_run/);
  expect(shown.stdout).toMatch(/ATTEMPT\s+AT\s+ANSWER/);
  expect(shown.stderr).toContain(`pipegate redeliver quotes ${badId}`);
  expect(view.failed_node).toMatchObject({ node: 'rates', http_status: 502 });
  expect(view.trace.map((t) => [t.node, t.outcome])).toEqual([
    ['destination', 'completed'],
    ['code', 'completed'],
    ['rates', 'failed'],
    ['price', 'not_run'],
    ['amount', 'not_run'],
  ]);
  expect(view.callback_delivery.log.map((a) => a.status)).toEqual([500, 500]);

  // Act 3: the receiver is fixed; redeliver.
  receiver.failRate = 0;
  const redelivered = await pg(['redeliver', 'quotes', badId]);
  const after = await waitUntil(
    () => rt.owner('GET', `/v1/pipelines/quotes/executions/${badId}`),
    (r) => (r.body.callback_delivery as { outcome?: string } | null)?.outcome === 'delivered',
  );

  // Assess 3: one new attempt, marked as a redelivery, under the same webhook-id.
  expect(redelivered.code).toBe(0);
  expect(redelivered.stdout).toContain('queued again (attempt 3');
  const hooks = receiver.hooks.filter((h) => h.executionId === badId);
  expect(hooks.map((h) => h.answered)).toEqual([500, 500, 204]);
  expect(new Set(hooks.map((h) => h.webhookId))).toEqual(new Set([view.callback_delivery.webhook_id]));
  expect((after.body.callback_delivery as { log: { redelivery: boolean }[] }).log.map((a) => a.redelivery)).toEqual([false, false, true]);
  expect((await pg(['show', 'quotes', badId])).stdout).toMatch(/3\s+\S+ \S+\s+204\s+\S+ ms\s+redelivery/);

  // Act 4: a running execution is cancelled by the owner.
  mode = 'hang';
  const slow = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
  const slowId = slow.body.execution_id as string;
  await rt.waitForExecution(slowId, p.apiKey, (s) => s === 'running');
  const cancelled = await pg(['cancel', 'quotes', slowId]);
  const again = await pg(['cancel', 'quotes', slowId]);
  const stopped = await waitUntil(
    () => rt.owner('GET', `/v1/pipelines/quotes/executions/${slowId}`),
    (r) => Array.isArray(r.body.trace),
  );

  // Assess 4
  expect(cancelled.code).toBe(0);
  expect(cancelled.stdout).toContain(`execution ${slowId} of quotes cancelled`);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('Execution already finished');
  expect((await rt.caller('GET', `/v1/deployments/executions/${slowId}/status/`, p.apiKey)).body.status).toBe('cancelled');
  expect((stopped.body.trace as { node: string; outcome: string }[]).find((t) => t.node === 'rates')?.outcome).toBe('stopped');

  // Act 5: usage and the caller's result.
  const usage = parse<{ last_hour: { total: number; by_status: Record<string, number> } }>(await pg(['usage', 'quotes', '--json']));
  const usageTable = await pg(['usage', 'quotes']);
  const result = await pg(['result', good.body.execution_id as string, '--key', p.apiKey]);

  // Assess 5
  expect(usage.last_hour).toMatchObject({ total: 3, by_status: { completed: 1, failed: 1, cancelled: 1 } });
  expect(usageTable.stdout).toMatch(/last hour\s+3\s+1\s+1\s+1/);
  expect(result.code).toBe(0);
  expect(result.stdout).toMatch(/amount\s+12\.75/);
});

it('run prints the run id before it waits; Ctrl-C then says how to follow up and how to cancel', async () => {
  // Prepare
  mode = 'hang';
  let sent = false;

  // Act
  const done = await pg(['run', 'quotes'], (stderr, child) => {
    if (!sent && /run [0-9a-f-]{36} of quotes/.test(stderr)) {
      sent = true;
      child.kill('SIGINT');
    }
  });

  // Assess
  const runId = /run ([0-9a-f-]{36}) of quotes/.exec(done.stderr)?.[1] ?? '';
  expect(runId).not.toBe('');
  expect(done.code).toBe(130);
  expect(done.stderr).toContain(`pipegate show quotes ${runId}`);
  expect(done.stderr).toContain(`pipegate cancel quotes ${runId}`);
  // The run is still going on the service; the printed command cancels it.
  expect((await rt.owner('GET', `/v1/pipelines/quotes/runs/${runId}`)).body.status).not.toBe('cancelled');
  const cancelled = await pg(['cancel', 'quotes', runId]);
  expect(cancelled.code).toBe(0);
  expect((await rt.owner('GET', `/v1/pipelines/quotes/runs/${runId}`)).body.status).toBe('cancelled');
});
