/**
 * The wait node (functions/core/nodes/wait.ts): what a push accepts and refuses, how it waits
 * across steps, takes its event (also one that came before it began), times out, and how an
 * http node hands its resume URL to a job (functions/core/resume-refs.ts) without the run
 * keeping it anywhere.
 */
import { MemoryJournal, runStep, runStepTraced, type StepOptions, type StepResult } from '../../../functions/core/engine';
import { resumeBodyProblems, WAIT_TIMEOUT_MAX_MS } from '../../../functions/core/nodes/wait';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort, HttpRequest, HttpResponse } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';

function definition(nodes: Record<string, unknown>, extra: Record<string, unknown> = {}): PipelineDefinition {
  const result = validateDefinition({ nodes, ...extra });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const problemsOf = (nodes: Record<string, unknown>) => {
  const r = validateDefinition({ nodes });
  return r.ok ? [] : r.problems;
};

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const TOKEN = 'w1.3f1c2a2e-5b8d-4c47-9a57-6f0d3c1e9b10.approval.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde';
const RESUME = `https://api.example.test/v1/resume/${TOKEN}`;

function world(def: PipelineDefinition, http: HttpPort, over: Partial<StepOptions> = {}) {
  let t = Date.parse('2026-11-27T10:00:00Z');
  const journal = new MemoryJournal();
  const startedAt = t;
  const opts = (): StepOptions => ({ http, timeoutMs: 7 * 86_400_000, startedAt, now: () => t, journal, executionId: 'e-1', ...over });
  return {
    journal,
    step: async (): Promise<StepResult> => (await runStep(def, {}, opts())).result,
    traced: () => runStepTraced(def, {}, opts()),
    advance: (ms: number) => {
      t += ms;
    },
    now: () => t,
  };
}

const noCalls: HttpPort = async () => {
  throw new Error('no call expected');
};

const approval = (node: Record<string, unknown> = {}) =>
  definition({
    name: { type: 'input', value_type: 'string', value: 'world' },
    approval: { type: 'wait', inputs: ['name'], timeout_ms: 3_600_000, ...node },
    verdict: { type: 'transform', inputs: ['approval', 'name'], expression: "name & ': ' & (approval.approved ? 'yes' : 'no')" },
    out: { type: 'output', from: 'verdict' },
  });

describe('the wait node at push', () => {
  it('takes a time-out from 1 s to 7 days, and lists every problem of a node at once', () => {
    expect(problemsOf({ w: { type: 'wait', timeout_ms: 1000 } })).toEqual([]);
    expect(problemsOf({ w: { type: 'wait', timeout_ms: WAIT_TIMEOUT_MAX_MS } })).toEqual([]);
    expect(
      problemsOf({ w: { type: 'wait', timeout_ms: 999, on_timeout: {}, fields: { '9x': { value_type: 'date' } }, extra: 1 } }),
    ).toEqual([
      { path: 'nodes.w.extra', reason: expect.stringContaining('unknown field for a wait node') },
      { path: 'nodes.w.timeout_ms', reason: 'must be at least 1000 ms' },
      { path: 'nodes.w.on_timeout.value', reason: 'is required' },
      { path: 'nodes.w.fields["9x"]', reason: expect.stringContaining('a field name must start with a letter') },
      { path: 'nodes.w.fields["9x"].value_type', reason: 'must be one of string, integer, float, boolean' },
    ]);
    expect(problemsOf({ w: { type: 'wait', timeout_ms: WAIT_TIMEOUT_MAX_MS + 1 } })).toEqual([
      { path: 'nodes.w.timeout_ms', reason: `must be at most ${WAIT_TIMEOUT_MAX_MS} ms` },
    ]);
    expect(problemsOf({ w: { type: 'wait' } })).toEqual([{ path: 'nodes.w.timeout_ms', reason: 'is required' }]);
  });

  it("takes $resume_url('id') in an http node's body and {{resume_url.id}} in its url and headers, naming a wait node", () => {
    const nodes = (call: Record<string, unknown>) => ({
      submit: { type: 'http', method: 'POST', url: 'https://jobs.example/v1/jobs', ...call },
      approval: { type: 'wait', inputs: ['submit'], timeout_ms: 60_000 },
      label: { type: 'transform', inputs: [], expression: "'x'" },
    });
    expect(problemsOf(nodes({ body: "{'webhook': $resume_url('approval')}" }))).toEqual([]);
    expect(
      problemsOf(
        nodes({ url: 'https://jobs.example/v1/jobs?hook={{resume_url.approval}}', headers: { 'X-Hook': '{{ resume_url.approval }}' } }),
      ),
    ).toEqual([]);
    expect(problemsOf(nodes({ body: "{'a': $resume_url('nope'), 'b': $resume_url(\"label\")}" }))).toEqual([
      { path: 'nodes.submit.body', reason: "names the resume URL of 'nope', but no node has that id" },
      { path: 'nodes.submit.body', reason: "names the resume URL of 'label', a transform node; only wait nodes have one" },
    ]);
    expect(problemsOf(nodes({ body: '{"a": $resume_url(x)}', headers: { 'X-Hook': '{{resume_url}}' } }))).toEqual([
      { path: 'nodes.submit.headers["X-Hook"]', reason: expect.stringContaining('{{resume_url}} is not a resume URL reference') },
      { path: 'nodes.submit.body', reason: "write $resume_url('ID') with ID a wait node's id, as a quoted string" },
    ]);
  });

  it('refuses $resume_url where nothing gives it: other nodes, and an http poll', () => {
    expect(
      problemsOf({
        approval: { type: 'wait', timeout_ms: 60_000 },
        t: { type: 'transform', inputs: ['approval'], expression: "$resume_url('approval')" },
      }),
    ).toEqual([{ path: 'nodes.t.expression', reason: expect.stringContaining('$resume_url is available only in an http node') }]);
  });
});

describe('the wait node at run', () => {
  it('waits with nothing running until its event, whose object is its value', async () => {
    const w = world(approval(), noCalls);
    const first = await w.step();
    expect(first).toEqual({
      status: 'waiting',
      wake: w.now() + 3_600_000,
      waiting: [{ node: 'approval', type: 'wait', until: w.now() + 3_600_000, started_at: w.now() }],
    });
    expect(w.journal.nodes.get('approval')).toMatchObject({ state: 'waiting', until: w.now() + 3_600_000 });
    // Woken without an event before its time-out: it waits on.
    w.advance(60_000);
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 3_540_000 });
    expect(w.journal.resume('approval', { value: { approved: true }, at: w.now() })).toBe(true);
    // Single use: a second event is not kept.
    expect(w.journal.resume('approval', { value: { approved: false }, at: w.now() })).toBe(false);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 'world: yes' } });
    expect(w.journal.nodes.get('approval')).toMatchObject({ state: 'done', value: { approved: true } });
  });

  it('takes an event that came before it began to wait at once (a fast webhook)', async () => {
    const w = world(approval(), noCalls);
    w.journal.resume('approval', { value: { approved: false }, at: w.now() });
    expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 'world: no' } });
  });

  it('fails naming its time-out, or takes on_timeout.value instead', async () => {
    const failing = world(approval(), noCalls);
    await failing.step();
    failing.advance(3_600_000);
    expect(await failing.step()).toEqual({
      status: 'failed',
      error_message: "Node 'approval' failed: no event came to its resume URL within 3600000 ms (timeout_ms)",
      caller_message: "Node 'approval' failed: no event came before its time-out",
    });

    const defaulted = world(approval({ on_timeout: { value: { approved: false } } }), noCalls);
    await defaulted.step();
    defaulted.advance(3_599_999);
    expect((await defaulted.step()).status).toBe('waiting');
    defaulted.advance(1);
    expect(await defaulted.step()).toEqual({ status: 'completed', outputs: { out: 'world: no' } });
  });

  it("never waits past the execution's own end", async () => {
    const w = world(approval({ timeout_ms: WAIT_TIMEOUT_MAX_MS }), noCalls, { timeoutMs: 600_000 });
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 600_000 });
  });
});

describe('$resume_url in an http node', () => {
  const job = (call: Record<string, unknown>) =>
    definition({
      submit: { type: 'http', method: 'POST', url: 'https://jobs.example/v1/jobs', ...call },
      done: { type: 'wait', inputs: ['submit'], timeout_ms: 60_000 },
      result: { type: 'transform', inputs: ['done', 'submit'], expression: 'done.output & " / " & submit.echo' },
      out: { type: 'output', from: 'result' },
    });

  it('sends the URL in the body, url and headers, and keeps it out of every value, trace and result the run holds', async () => {
    const calls: HttpRequest[] = [];
    // The job server echoes its webhook back, as many do.
    const http: HttpPort = async (req) => {
      calls.push(req);
      return json(200, { id: 'j1', echo: JSON.parse(String(req.body)).webhook });
    };
    const w = world(
      job({
        url: 'https://jobs.example/v1/jobs?hook={{resume_url.done}}',
        headers: { 'X-Webhook': '{{resume_url.done}}' },
        body: "{'webhook': $resume_url('done')}",
      }),
      http,
      { resumeUrls: { done: RESUME } },
    );
    const first = await w.traced();
    expect(first.result.status).toBe('waiting');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url).toBe(`https://jobs.example/v1/jobs?hook=${RESUME}`);
    expect(calls[0]?.headers['X-Webhook']).toBe(RESUME);
    expect(JSON.parse(String(calls[0]?.body))).toEqual({ webhook: RESUME });
    w.journal.resume('done', { value: { output: 'a cat' }, at: w.now() });
    const second = await w.traced();
    expect(second.result).toEqual({ status: 'completed', outputs: { out: 'a cat / https://api.example.test/v1/resume/[redacted]' } });
    const kept = JSON.stringify({ journal: [...w.journal.nodes], first, second });
    expect(kept).not.toContain(TOKEN);
  });

  it('fails a node whose URL a run was not given, without saying more to callers', async () => {
    const w = world(job({ body: "{'webhook': $resume_url('done')}" }), async () => json(200, {}));
    expect(await w.step()).toMatchObject({
      status: 'failed',
      error_message: expect.stringContaining("no resume URL for 'done'"),
      caller_message: "Node 'submit' failed: the pipeline is missing a setting",
    });
  });
});

describe('resumeBodyProblems', () => {
  it('takes any object without fields, and with fields each one, typed, and nothing else', () => {
    expect(resumeBodyProblems({}, { anything: [1] })).toEqual([]);
    expect(resumeBodyProblems({}, [1])).toEqual([{ path: '(body)', reason: 'the body must be a JSON object, got an array' }]);
    expect(resumeBodyProblems({}, 'yes')).toEqual([{ path: '(body)', reason: 'the body must be a JSON object, got a string' }]);
    const fields = { approved: { value_type: 'boolean' as const }, count: { value_type: 'integer' as const } };
    expect(resumeBodyProblems({ fields }, { approved: true, count: 2 })).toEqual([]);
    expect(resumeBodyProblems({ fields }, { approved: 'yes', other: 1 })).toEqual([
      { path: 'approved', reason: 'must be true or false, got a string' },
      { path: 'count', reason: 'is required' },
      { path: 'other', reason: 'is not a field of this wait' },
    ]);
  });
});
