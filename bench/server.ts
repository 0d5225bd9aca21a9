/**
 * The server under test, run as a child process of bench/run.ts: either the floor or the
 * whole local runtime (instrumented, with the greeting pipeline published). It reports each
 * finished execution to the parent, so the load generator never has to poll for completion.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as v from 'valibot';
import { createHandler as createRunner } from '../functions/runner/handler';
import { createLambdaContext } from '../lib/local/lambda-context';
import { startRuntime, type Runtime } from '../lib/local/runtime';
import { countExecutions } from './aws-calls';
import { startFloor } from './floor';
import { cloneCounts, instrumentation } from './instrument';
import { CommandMessage, type ChildMessage, type ServerMode } from './protocol';

const send = (m: ChildMessage): void => {
  process.send?.(m);
};

async function json(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** push → run to the end → publish, as an owner would. */
async function publishGreeting(rt: Runtime): Promise<{ apiKey: string; deploymentId: string }> {
  const owner = { authorization: `Bearer ${rt.ownerToken}` };
  const def: unknown = JSON.parse(readFileSync(resolve(__dirname, '..', 'examples', 'greeting.json'), 'utf8'));
  await json(`${rt.url}/v1/pipelines/greeting`, 'PUT', owner, def);
  const run = await json(`${rt.url}/v1/pipelines/greeting/runs`, 'POST', owner, {});
  const runUrl = `${rt.url}/v1/pipelines/greeting/runs/${String(run.run_id)}`;
  for (let i = 0; ; i++) {
    const r = await json(runUrl, 'GET', owner);
    if (r.status === 'completed') break;
    if (r.status === 'failed' || r.status === 'cancelled' || i > 400)
      throw new Error(`the greeting run did not complete: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 10));
  }
  const pub = await json(`${rt.url}/v1/pipelines/greeting/deployment`, 'PUT', owner, {});
  return { apiKey: String(pub.api_key), deploymentId: String(pub.deployment_id) };
}

async function runtimeMode(dataDir: string): Promise<void> {
  const waiting = new Map<string, (status: string) => void>();
  const inst = instrumentation((e) => {
    send({ type: 'done', id: e.execution_id, status: e.status, created_at: e.created_at, completed_at: e.completed_at });
    waiting.get(e.execution_id)?.(e.status);
    waiting.delete(e.execution_id);
  });
  // Configured as on AWS (open executions indexed, the marker moved in the status write), so the counts feed the AWS cost model.
  // Only the DynamoDB transport passes through, so `PIPEGATE_DYNAMODB_TRANSPORT=http npm run bench` measures loopback HTTP.
  const transport = process.env.PIPEGATE_DYNAMODB_TRANSPORT;
  const env = transport ? { PIPEGATE_DYNAMODB_TRANSPORT: transport } : {};
  const rt = await startRuntime({ port: 0, dataDir, log: false, env, trackOpen: true, wrapDeps: inst.wrap });
  const { apiKey, deploymentId } = await publishGreeting(rt);

  let runnerInvocations = 0;
  let paused = false;
  const runner = createRunner(() => rt.deps);
  const consumer = (event: SQSEvent) => {
    runnerInvocations++;
    return runner(event, createLambdaContext('runner')) as Promise<SQSBatchResponse>;
  };
  const pause = async (): Promise<void> => {
    if (paused) return;
    paused = true;
    await rt.queues.executions.stop();
  };
  const resume = (): void => {
    if (!paused) return;
    paused = false;
    rt.queues.executions.start(consumer);
  };

  const commands: Record<string, (arg?: number) => Promise<unknown>> = {
    count: async (n = 12) => {
      inst.units = true;
      try {
        return await countExecutions(
          {
            counts: inst.counts,
            post: async () => {
              const out = await json(`${rt.url}/v1/deployments/${deploymentId}/executions`, 'POST', { 'x-api-key': apiKey }, {});
              return String(out.execution_id);
            },
            waitTerminal: (id) => new Promise<string>((res) => waiting.set(id, res)),
            pause,
            resume: () => resume(),
            idle: () => rt.workflow.idle(),
            runnerInvocations: () => runnerInvocations,
          },
          n,
        );
      } finally {
        inst.units = false;
      }
    },
    pause,
    resume: async () => resume(),
    cpu: cpuMs,
    /** Everything counted so far, and the runner invocations (for differences around a load). */
    snapshot: async () => ({ counts: cloneCounts(inst.counts), runnerInvocations }),
    /** 1: measure DynamoDB capacity units from here on; 0: stop. */
    units: async (on = 0) => {
      inst.units = on === 1;
    },
    stop: async () => {
      await rt.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  serve(commands);
  send({ type: 'ready', url: rt.url, apiKey, deploymentId });
}

async function floorMode(dataDir: string): Promise<void> {
  const floor = await startFloor({ path: join(dataDir, 'db') });
  serve({
    cpu: cpuMs,
    stop: async () => {
      await floor.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
  send({ type: 'ready', url: floor.url });
}

/** CPU time this process has used (every thread), in ms. */
async function cpuMs(): Promise<number> {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function serve(commands: Record<string, (arg?: number) => Promise<unknown>>): void {
  process.on('message', (raw: unknown) => {
    const parsed = v.safeParse(CommandMessage, raw);
    if (!parsed.success) return;
    const { seq, name, arg } = parsed.output;
    const run = commands[name];
    (run ? run(arg) : Promise.reject(new Error(`unknown command ${name}`))).then(
      (result) => {
        send({ type: 'reply', seq, ok: true, result: result ?? null });
        if (name === 'stop') process.disconnect();
      },
      (err: unknown) => send({ type: 'reply', seq, ok: false, result: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  // The parent went away (crashed or was killed): never outlive it.
  process.on('disconnect', () => setTimeout(() => process.exit(0), 100).unref());
}

const mode = process.argv[2] as ServerMode | undefined;
const dataDir = mkdtempSync(join(tmpdir(), `pipegate-bench-${mode ?? 'x'}-`));
(mode === 'floor'
  ? floorMode(dataDir)
  : mode === 'runtime'
    ? runtimeMode(dataDir)
    : Promise.reject(new Error('usage: server.ts runtime|floor'))
).catch((err: unknown) => {
  console.error(err);
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
