/**
 * Each execution on its state machine, over real HTTP: a pipeline that ends within five minutes
 * runs on Express, one that waits runs on Standard, as its push said and its owner's views say;
 * a cancel stops a Standard execution asleep in its Wait state at once (StopExecution), where
 * otherwise it would sleep on for an hour. test/e2e/synth/machines.test.ts runs the same against
 * start:synth, where the machines are the template's and every call is put to IAM.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isTerminalStatus } from '../../functions/core/transitions';
import type { PipelineDefinition } from '../../functions/core/types';
import type { SynthRuntime } from '../../lib/synth/runtime';
import { e2eMode, startE2eRuntime, waitUntil, type E2eRuntime } from '../support/runtime';

jest.setTimeout(120_000);

/** An upstream that holds every request until released: an execution is running for as long as the test wants. */
interface Held {
  url: string;
  waiting(): number;
  release(): void;
  close(): Promise<void>;
}

async function heldUpstream(): Promise<Held> {
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const release = () => {
    for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('"done"');
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`,
    waiting: () => held.length,
    release,
    close: async () => {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let rt: E2eRuntime;
let upstream: Held;

const short = (url: string): PipelineDefinition =>
  ({
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'x' },
      call: { type: 'http', method: 'GET', url, inputs: ['name'], timeout_ms: 30_000 },
      out: { type: 'output', from: 'call' },
    },
  }) as unknown as PipelineDefinition;

/** A delay of an hour: a Wait state of an hour, within its own two-hour time-out. */
const hourLong = {
  timeout_ms: 7_200_000,
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    later: { type: 'delay', inputs: ['name'], ms: 3_600_000 },
    out: { type: 'output', from: 'later' },
  },
} as unknown as PipelineDefinition;

beforeAll(async () => {
  upstream = await heldUpstream();
  rt = await startE2eRuntime();
});

afterAll(async () => {
  await upstream?.close();
  await rt?.cleanup();
});

async function startRun(id: string): Promise<string> {
  const r = await rt.owner('POST', `/v1/pipelines/${id}/runs`, {});
  expect(r.status).toBe(202);
  return r.body.run_id as string;
}

it('runs a pipeline that ends within five minutes on Express, as its push says and its run shows', async () => {
  // Act
  const pushed = await rt.owner('PUT', '/v1/pipelines/short-call', short(upstream.url));
  const runId = await startRun('short-call');
  // Running, its step held at the upstream: on the Express machine, not the Standard one.
  await waitUntil(
    async () => ({ held: upstream.waiting(), run: (await rt.owner('GET', `/v1/pipelines/short-call/runs/${runId}`)).body }),
    (s) => s.held > 0 || isTerminalStatus(String(s.run.status)),
  );
  const onExpress = rt.workflow.machines.express.running();
  const onStandard = rt.workflow.machines.standard.running();
  upstream.release();
  const run = await waitUntil(
    async () => (await rt.owner('GET', `/v1/pipelines/short-call/runs/${runId}`)).body,
    (b) => isTerminalStatus(String(b.status)),
  );

  // Assess
  expect(pushed.body).toMatchObject({ workflow: 'express' });
  expect(onExpress).toContain(runId);
  expect(onStandard).not.toContain(runId);
  expect(run).toMatchObject({ status: 'completed', workflow: 'express', error_message: null });
  const view = await rt.owner('GET', `/v1/pipelines/short-call/executions/${runId}`);
  expect(view.body).toMatchObject({ execution_id: runId, workflow: 'express' });
});

it('runs a pipeline that waits on Standard, and a cancel stops it in its Wait state at once', async () => {
  // Prepare: the run parked in its hour-long Wait (its delay recorded waiting, the step ended).
  const pushed = await rt.owner('PUT', '/v1/pipelines/hour-long', hourLong);
  const runId = await startRun('hour-long');
  await waitUntil(
    async () => (await rt.deps.executions.get(runId, new Date(), true))?.waiting ?? null,
    (w) => w !== null && w.includes('later'),
  );
  const asleep = rt.workflow.machines.standard.running();

  // Act
  const cancelled = await rt.owner('POST', `/v1/pipelines/hour-long/executions/${runId}/cancel`);
  // Stopped, not left to wake in an hour and find the run cancelled: only a hang reaches the limit.
  await waitUntil(
    async () => rt.workflow.machines.standard.running(),
    (names) => !names.includes(runId),
  );

  // Assess
  expect(pushed.body).toMatchObject({ workflow: 'standard', workflow_reason: expect.stringContaining('timeout_ms 7200000') });
  expect(asleep).toContain(runId);
  expect(rt.workflow.machines.express.running()).not.toContain(runId);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body).toMatchObject({ status: 'cancelled', workflow: 'standard' });
  expect((await rt.owner('GET', `/v1/pipelines/hour-long/runs/${runId}`)).body).toMatchObject({
    status: 'cancelled',
    workflow: 'standard',
  });
  if (e2eMode() === 'synth') {
    // The owner cancel's role may stop the Standard machine's executions: no call was refused.
    expect((rt as unknown as SynthRuntime).endpoint.denials.filter((d) => d.action.startsWith('states:'))).toEqual([]);
  }
});
