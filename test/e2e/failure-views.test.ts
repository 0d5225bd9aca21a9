/**
 * Two views of a failure: the owner's (run, owner execution view) keeps every detail of why a
 * node failed; the caller's (status, result) names the node and a safe reason, never the
 * upstream's URL or answer, a header, or a secret's name. Planted markers in the URL, the
 * upstream's body and the secret's name prove it.
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { reply, startTestServer, type TestServer } from '../support/http-server';
import { startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

const URL_MARKER = 'planted-path-segment';
const BODY_MARKER = 'planted-upstream-body';
const SECRET_NAME = 'PLANTED_SECRET_NAME';

let rt: TestRuntime;
let upstream: TestServer;
let answer = 200;
let published: Published;

beforeAll(async () => {
  upstream = await startTestServer((_req, res) =>
    reply(res, answer, answer === 200 ? { word: 'ok' } : { error: `${BODY_MARKER}: token refused` }),
  );
  rt = await startTestRuntime();
  expect((await rt.owner('PUT', `/v1/secrets/${SECRET_NAME}`, { value: 'some-token-value' })).status).toBe(200);
  const def: PipelineDefinition = {
    nodes: {
      call: {
        type: 'http',
        url: `${upstream.origin}/${URL_MARKER}/upstream`,
        headers: { authorization: `Bearer {{secrets.${SECRET_NAME}}}` },
      },
      word: { type: 'transform', inputs: ['call'], expression: 'call.word' },
      out: { type: 'output', from: 'word' },
    },
  };
  published = await rt.publishPipeline('two-views', def);
});

afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
});

async function failedExecution(): Promise<string> {
  const r = await rt.caller('POST', `/v1/deployments/${published.deploymentId}/executions/`, published.apiKey, {});
  expect(r.status).toBe(202);
  const id = String(r.body.execution_id);
  const done = await rt.waitForExecution(id, published.apiKey);
  expect(done.status).toBe('failed');
  return id;
}

async function views(id: string) {
  const status = await rt.caller('GET', `/v1/deployments/executions/${id}/status/`, published.apiKey);
  const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, published.apiKey);
  const owner = await rt.owner('GET', `/v1/pipelines/two-views/executions/${id}`);
  return { caller: [status, result], owner };
}

const leaks = (text: string) =>
  [URL_MARKER, BODY_MARKER, SECRET_NAME, upstream.origin, 'authorization', 'Bearer'].filter((m) => text.includes(m));

it('an upstream that refuses: callers read the node and its status; the owner reads the URL and the answer', async () => {
  answer = 401;
  const id = await failedExecution();
  const { caller, owner } = await views(id);
  for (const r of caller) {
    expect(r.body.error_message).toBe("Node 'call' failed: upstream answered 401");
    expect(leaks(r.text)).toEqual([]);
  }
  expect(String(owner.body.error_message)).toContain(`HTTP 401 from ${upstream.origin}/${URL_MARKER}/upstream`);
  expect(String(owner.body.error_message)).toContain(BODY_MARKER);
});

it('a secret that is not set: callers read that a setting is missing; the owner reads which and how to set it', async () => {
  answer = 200;
  expect((await rt.owner('DELETE', `/v1/secrets/${SECRET_NAME}`)).status).toBe(204);
  const id = await failedExecution();
  const { caller, owner } = await views(id);
  for (const r of caller) {
    expect(r.body.error_message).toBe("Node 'call' failed: the pipeline is missing a setting");
    expect(leaks(r.text)).toEqual([]);
  }
  expect(String(owner.body.error_message)).toContain(
    `secret '${SECRET_NAME}' is not set (set it with: pipegate secrets set ${SECRET_NAME})`,
  );
});
