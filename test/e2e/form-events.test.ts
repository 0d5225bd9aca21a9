/**
 * A form execution's event stream over real HTTP (`GET /v1/forms/{token}/executions/{id}/events`,
 * the local runtime; again against start:synth, under IAM, in test/e2e/synth/form-events.test.ts):
 * the callers' events of a run made through the link, `done` holding what the form's execution
 * route answers; a wrong link, another link's execution, a disabled or rotated form answer 404
 * revealing nothing; opening streams counts against the form's rate limits (429 with Retry-After).
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { request, sleep, startE2eRuntime, type E2eRuntime, type Published } from '../support/runtime';
import { openSse } from '../support/sse';

let rt: E2eRuntime;
let pub: Published;
let formUrl: string;

const def: PipelineDefinition = {
  nodes: {
    word: { type: 'input', value_type: 'string', value: 'hello' },
    secret_in: { type: 'input', value_type: 'string', value: 'HIDDEN-INPUT' },
    later: { type: 'delay', inputs: ['word'], ms: 300 },
    loud: { type: 'transform', inputs: ['later', 'secret_in'], expression: '$uppercase(later)' },
    said: { type: 'output', from: 'loud' },
    secret_out: { type: 'output', from: 'secret_in' },
  },
};
const visibility = { inputs: { secret_in: { visible: false } }, outputs: { secret_out: { visible: false } } };

beforeAll(async () => {
  rt = await startE2eRuntime({ env: { PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE: '1000', PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: '1000' } });
  pub = await rt.publishPipeline('shouter', def, { ...visibility, form: { enabled: true } });
  formUrl = pub.body.form_url as string;
});
afterAll(async () => {
  await rt?.cleanup();
});

const formRun = async (url: string, input: Record<string, unknown> = {}) => {
  const r = await request<Record<string, unknown>>(`${url}/executions`, 'POST', { workflow_input: input }, {});
  expect(r.status).toBe(202);
  return r.body.execution_id as string;
};
const events = (url: string, id: string, headers: Record<string, string> = {}) => openSse(`${url}/executions/${id}/events`, headers);

describe('a form execution streams its progress through its link', () => {
  it("sends the callers' events of the visible nodes, then done: what the form's execution route answers", async () => {
    const id = await formRun(formUrl, { word: { value: 'hi', value_type: 'RAW' } });
    const s = await events(formUrl, id);
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await s.ended;
    expect(s.retry).toBe(2000);
    const names = s.events.map((e) => e.event);
    expect(names[0]).toBe('status');
    expect(names.at(-1)).toBe('done');
    expect(s.events.map((e) => Number(e.id))).toEqual(s.events.map((_, i) => i + 1));
    const nodes = s.events.filter((e) => e.event === 'node').map((e) => e.data.node_id);
    expect(nodes).toEqual(expect.arrayContaining(['word', 'later', 'loud', 'said']));
    expect(nodes).not.toContain('secret_in');
    expect(nodes).not.toContain('secret_out');
    expect(s.events.filter((e) => e.event === 'output').map((e) => e.data)).toEqual([{ output: 'said', value: 'HI', value_type: 'RAW' }]);
    const done = s.events.at(-1)?.data as Record<string, unknown>;
    const read = await request<Record<string, unknown>>(`${formUrl}/executions/${id}`, 'GET', undefined, {});
    expect(done).toEqual({ ...read.body, completed_at: done.completed_at });
    expect(done).toMatchObject({
      status: 'completed',
      execution_id: id,
      output_artifacts: [],
      response_data: { said: { value: 'HI', value_type: 'RAW' } },
    });
    expect(JSON.stringify(s.events)).not.toContain('HIDDEN');

    // Last-Event-ID resumes after that event, as for callers.
    const again = await events(formUrl, id, { 'last-event-id': String(s.events.length - 1) });
    await again.ended;
    expect(again.events.map((e) => e.event)).toEqual(['done']);
  });
});

describe('the link is the capability', () => {
  it("answers 404 revealing nothing for a wrong link, a made-up or API execution, and another link's execution", async () => {
    const id = await formRun(formUrl);
    const token = formUrl.split('/').pop() as string;
    const flipped = `${rt.url}/v1/forms/${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    for (const url of [flipped, `${rt.url}/v1/forms/pgf_${'A'.repeat(43)}`, `${rt.url}/v1/forms/nonsense`]) {
      const r = await request(`${url}/executions/${id}/events`, 'GET', undefined, { accept: 'text/event-stream' });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 'Form Not Found' });
    }
    const api = await rt.caller('POST', `/v1/deployments/${pub.deploymentId}/executions/`, pub.apiKey, {});
    const other = await rt.publishPipeline('other-shouter', def, { form: { enabled: true } });
    const othersRun = await formRun(other.body.form_url as string);
    for (const foreign of [api.body.execution_id as string, othersRun, '00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const r = await request(`${formUrl}/executions/${foreign}/events`, 'GET', undefined, { accept: 'text/event-stream' });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 'Execution Not Found' });
    }
    // The other link reads its own.
    const own = await events(other.body.form_url as string, othersRun);
    expect(own.status).toBe(200);
    own.close();
  });

  it('answers 404 at once once the form is disabled or its link rotated', async () => {
    const p = await rt.publishPipeline('switched', def, { form: { enabled: true } });
    const first = p.body.form_url as string;
    const id = await formRun(first);
    expect((await events(first, id)).status).toBe(200);
    await rt.owner('PUT', '/v1/pipelines/switched/deployment', { form: { enabled: false } });
    const off = await request(`${first}/executions/${id}/events`, 'GET', undefined, {});
    expect(off.status).toBe(404);
    expect(off.body).toEqual({ error: 'Form Not Found' });
    await rt.owner('PUT', '/v1/pipelines/switched/deployment', { form: { enabled: true } });
    expect((await events(first, id)).status).toBe(200);
    const rotated = await rt.owner('POST', '/v1/pipelines/switched/deployment/keys', { credential: 'form_link' });
    const second = rotated.body.form_url as string;
    expect((await request(`${first}/executions/${id}/events`, 'GET', undefined, {})).status).toBe(404);
    // Made through the old link: not readable through the new one either.
    const r = await request(`${second}/executions/${id}/events`, 'GET', undefined, {});
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: 'Execution Not Found' });
  });
});

describe('rate limits', () => {
  it('count each stream opened against the link: past the limit, 429 with Retry-After naming it', async () => {
    const limited = await startE2eRuntime({ env: { PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: '3' } });
    try {
      const p = await limited.publishPipeline('limited', def, { form: { enabled: true } });
      const url = p.body.form_url as string;
      // The windows are whole minutes: start well inside one, so the requests share it.
      if (new Date().getUTCSeconds() > 45) await sleep((61 - new Date().getUTCSeconds()) * 1000);
      const id = await formRun(url);
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof request<Record<string, unknown>>>> | null = null;
      for (let i = 0; i < 3; i++) {
        last = await request<Record<string, unknown>>(`${url}/executions/${id}/events`, 'GET', undefined, {});
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      expect(Number(last?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(last?.body.error).toBe('Too Many Requests');
      expect(String(last?.body.detail)).toMatch(/at most 3 runs, uploads and progress streams a minute/);
      // The long poll is not counted: the page falls back to it.
      expect((await request(`${url}/executions/${id}`, 'GET', undefined, {})).status).toBe(200);
    } finally {
      await limited.cleanup();
    }
  });
});
