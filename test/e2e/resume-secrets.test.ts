/**
 * Resume URLs are capabilities: this plants them and searches for them. A visible wait's URL
 * goes to its caller (and the owner); a hidden one's, handed by the pipeline to its upstream
 * (which echoes it back, as many job services echo their webhook), to nobody else. After both
 * executions ran, neither token is in any log line, any table item or any file of the data
 * dir (the engine takes them out of what it keeps, as it does owner secrets), and the hidden
 * one is in no answer its caller got: status, result, events.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { createLogger } from '../../functions/adapters/logger';
import { isTerminalStatus } from '../../functions/core/transitions';
import type { PipelineDefinition } from '../../functions/core/types';
import { reply, startTestServer, type TestServer } from '../support/http-server';
import { openSse } from '../support/sse';
import { request, startTestRuntime, waitUntil, type TestRuntime } from '../support/runtime';

jest.setTimeout(180_000);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-resume-secrets-'));
const lines: string[] = [];
let rt: TestRuntime;
let echo: TestServer;
/** Webhook URLs the upstream was handed, as it received them. */
const handed: string[] = [];

beforeAll(async () => {
  echo = await startTestServer((req, res) => {
    const body = JSON.parse(req.body || '{}') as { webhook?: string };
    if (body.webhook) handed.push(body.webhook);
    // It answers with the webhook it was given, and then calls it, as a job service does.
    reply(res, 200, { accepted: true, webhook: body.webhook });
    if (body.webhook) setTimeout(() => void request(body.webhook ?? '', 'POST', { done: true, said: 'the job is over' }, {}), 300);
  });
  rt = await startTestRuntime({ dataDir, inMemory: false, log: createLogger('pipegate-test', (line) => lines.push(line)) });
});

afterAll(async () => {
  await rt?.cleanup();
  await echo?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const pipeline = (echoUrl: string): PipelineDefinition =>
  ({
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'world' },
      call: {
        type: 'http',
        method: 'POST',
        url: `${echoUrl}/jobs`,
        inputs: ['name'],
        body: "{ 'name': name, 'webhook': $resume_url('hook') }",
      },
      hook: { type: 'wait', inputs: ['call'], timeout_ms: 60_000 },
      approval: { type: 'wait', inputs: ['hook'], timeout_ms: 60_000 },
      // The echoed webhook flows on to an output: what is kept of it is redacted.
      echoed: {
        type: 'transform',
        inputs: ['call', 'hook', 'approval'],
        expression: "call.webhook & ' / ' & hook.said & ' / ' & approval.ok",
      },
      out: { type: 'output', from: 'echoed' },
    },
  }) as unknown as PipelineDefinition;

it('keeps resume URLs out of logs, table items, stored files, and every answer of a caller not meant to have them', async () => {
  // Prepare: a run the owner resumes (to publish), then a caller's execution.
  expect((await rt.owner('PUT', '/v1/pipelines/planted', pipeline(echo.origin))).status).toBe(201);
  const run = await rt.owner('POST', '/v1/pipelines/planted/runs', {});
  const runId = run.body.run_id as string;
  const runView = await waitUntil(
    () => rt.owner('GET', `/v1/pipelines/planted/runs/${runId}`),
    (r) => (r.body.waiting as { node_id: string }[] | undefined)?.some((w) => w.node_id === 'approval') === true,
  );
  const runApproval = (runView.body.waiting as { node_id: string; resume_url: string }[]).find((w) => w.node_id === 'approval');
  expect((await request(runApproval?.resume_url ?? '', 'POST', { ok: 'yes' }, {})).status).toBe(202);
  await waitUntil(
    () => rt.owner('GET', `/v1/pipelines/planted/runs/${runId}`),
    (r) => r.body.status === 'completed',
  );
  const pub = await rt.owner('PUT', '/v1/pipelines/planted/deployment', { waits: { hook: { visible: false } } });
  const key = pub.body.api_key as string;
  const accepted = await rt.caller('POST', `/v1/deployments/${String(pub.body.deployment_id)}/executions/`, key, {});
  const id = accepted.body.execution_id as string;
  const events = await openSse(`${rt.url}/v1/deployments/executions/${id}/events/`, { 'x-api-key': key });

  // Act: the caller follows the execution, resumes the visible wait, reads the result.
  const answers: string[] = [];
  const waiting = await waitUntil(
    async () => {
      const s = await rt.caller('GET', `/v1/deployments/executions/${id}/status/`, key);
      answers.push(s.text);
      return s;
    },
    (s) => Array.isArray(s.body.waiting) || isTerminalStatus(s.body.status),
  );
  answers.push((await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, key)).text);
  const approvalUrl = (waiting.body.waiting as { node_id: string; resume_url: string }[])[0]?.resume_url ?? '';
  answers.push((await request(approvalUrl, 'POST', { ok: 'sure' }, {})).text);
  await rt.waitForExecution(id, key);
  const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, key);
  answers.push(result.text);
  await events.ended;
  answers.push(JSON.stringify(events.events));

  // Assess: what each party learned.
  const token = (url: string) => url.slice(url.lastIndexOf('/') + 1);
  const hookTokens = handed.map(token);
  expect(hookTokens).toHaveLength(2);
  expect(hookTokens.every((t) => t.startsWith('w1.') && t.length > 80)).toBe(true);
  expect((waiting.body.waiting as { node_id: string }[]).map((w) => w.node_id)).toEqual(['approval']);
  expect(result.body).toMatchObject({
    status: 'completed',
    response_data: { out: { value: `${rt.url}/v1/resume/[redacted] / the job is over / sure` } },
  });
  const callerSaw = answers.join('\n');
  const needles: [string, string][] = [
    ["the run's webhook token", hookTokens[0] ?? ''],
    ["the caller's hidden webhook token", hookTokens[1] ?? ''],
    ["the run's approval token", token(runApproval?.resume_url ?? '')],
    ["the caller's approval token", token(approvalUrl)],
  ];

  const table = createDocumentClient({ region: rt.deps.config.region, endpoint: rt.deps.config.dynamodbEndpoint });
  const items = JSON.stringify((await table.send(new ScanCommand({ TableName: rt.deps.config.table }))).Items ?? []);
  expect(items).toContain(id);
  const log = lines.join('\n');
  // The search can find: the resume route's requests are in the log, by their template.
  expect(log).toContain('/v1/resume/{token}');
  await rt.cleanup();
  const files = filesUnder(dataDir).map((f) => [f, readFileSync(f)] as const);

  const found: string[] = [];
  for (const [what, needle] of needles) {
    if (items.includes(needle)) found.push(`${what} in the table`);
    if (log.includes(needle)) found.push(`${what} in the log`);
    for (const [file, content] of files) if (content.includes(Buffer.from(needle))) found.push(`${what} in ${file.slice(dataDir.length)}`);
  }
  if (callerSaw.includes(hookTokens[1] ?? '')) found.push("the hidden webhook token in the caller's answers");
  if (callerSaw.includes(hookTokens[0] ?? '') || callerSaw.includes(token(runApproval?.resume_url ?? '')))
    found.push("the owner's run tokens in the caller's answers");
  expect(found).toEqual([]);
});
