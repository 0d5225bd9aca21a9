/**
 * Control flow over real HTTP (contract §2, conditions, merged outputs, the map node): a branch
 * each way, a join, an output merged from two branches, a skipped output absent from the result
 * and the callback (and optional in the deployment's OpenAPI); a map of 20 items over the
 * example image job service (examples/servers/image-jobs.mjs, its own process) with
 * concurrency 4, the service seeing at most 4 jobs open at once; a failing item under each
 * policy; a cancel in the middle of a map; examples/photo-styles.json end to end, its callback
 * carrying the gallery's links. The same suite runs on start:synth (test/e2e/synth/flow.test.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { startCallbackReceiver, startImageJobs, pngSize, type CallbackReceiver, type ImageJobs } from '../support/image-jobs';
import { png } from '../support/media';
import { openSse } from '../support/sse';
import { sleep, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

jest.setTimeout(240_000);

let rt: E2eRuntime;
let jobs: ImageJobs;
let receiver: CallbackReceiver;

beforeAll(async () => {
  // Polled every second (Retry-After: 1 at most): a map of short jobs moves along.
  jobs = await startImageJobs({ RETRY_AFTER_MAX_S: '1' });
  rt = await startE2eRuntime({ env: { PIPEGATE_EXECUTION_TIMEOUT_MS: '180000' } });
}, 180_000);

afterAll(async () => {
  await rt?.cleanup();
  await Promise.all([jobs?.close(), receiver?.close()]);
});

type Inputs = Record<string, string | number | boolean>;
const workflowInput = (inputs: Inputs) => Object.fromEntries(Object.entries(inputs).map(([k, value]) => [k, { value, value_type: 'RAW' }]));

async function submit(to: Published, inputs: Inputs, callback?: string): Promise<string> {
  const r = await rt.caller('POST', `/v1/deployments/${to.deploymentId}/executions/`, to.apiKey, {
    workflow_input: workflowInput(inputs),
    ...(callback === undefined ? {} : { callback }),
  });
  if (r.status !== 202) throw new Error(`execution refused: ${r.status} ${r.text}`);
  return r.body.execution_id as string;
}
const resultOf = async (to: Published, id: string) => {
  await rt.waitForExecution(id, to.apiKey);
  return (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, to.apiKey)).body;
};
const ownerView = async (pipeline: string, id: string) => (await rt.owner('GET', `/v1/pipelines/${pipeline}/executions/${id}`)).body;
const callbackOf = async (path: string) => {
  const all = await waitUntil(
    () => receiver.received(),
    (cs) => cs.some((c) => c.path === path),
  );
  const c = all.find((x) => x.path === path);
  return { ...c, body: JSON.parse(c?.body ?? '{}') as Record<string, unknown> };
};

/** The submits the job service saw for a map item, by its Idempotency-Key. */
const submitsOf = async (id: string, map: string, index: number) => (await jobs.stats()).submits[`${id}.${map}.${index}`] ?? 0;

const renderNode = (extraBody = '', seconds = 'seconds') => ({
  type: 'http',
  method: 'POST',
  url: `${jobs.url}/v1/jobs`,
  headers: { accept: 'image/png, application/json' },
  body: `{'prompt': prompt & ' ' & $string(index), 'seconds': ${seconds}, 'size': 16, 'style': ['mono', 'sepia', 'invert', 'poster'][index % 4]${extraBody}}`,
  poll: { url: 'url', every_ms: 1000, done: "status in ['succeeded', 'failed']", failed: "status = 'failed'", error: 'error' },
});

/** A map of n render jobs, each `seconds` long. */
const mapPipeline = (map: Record<string, unknown> = {}, extraBody = '', seconds = 'seconds'): PipelineDefinition =>
  ({
    timeout_ms: 180_000,
    nodes: {
      n: { type: 'input', value_type: 'integer', value: 2 },
      seconds: { type: 'input', value_type: 'float', value: 0.5 },
      prompt: { type: 'input', value_type: 'string', value: 'a harbour' },
      renders: {
        type: 'map',
        inputs: ['n', 'seconds', 'prompt'],
        items: '[1..n]',
        concurrency: 4,
        node: renderNode(extraBody, seconds),
        ...map,
      },
      count: { type: 'transform', inputs: ['renders'], expression: '$count(renders)' },
      gallery: { type: 'output', from: 'renders' },
      rendered: { type: 'output', from: 'count' },
    },
  }) as unknown as PipelineDefinition;

describe('branches, joins and merged outputs', () => {
  const branching = {
    nodes: {
      score: { type: 'input', value_type: 'integer', value: 7 },
      passed: { type: 'transform', inputs: ['score'], if: 'score >= 5', expression: "'kept ' & $string(score)" },
      refused: { type: 'transform', inputs: ['score'], if: 'score < 5', expression: "'refused ' & $string(score)" },
      shout: { type: 'transform', inputs: ['passed'], expression: '$uppercase(passed)' },
      either: { type: 'transform', inputs: ['passed', 'refused'], join: 'any', expression: '$keys($)[0]' },
      echo: { type: 'transform', inputs: ['score'], expression: 'score' },
      verdict: { type: 'output', from: ['shout', 'refused'] },
      loud: { type: 'output', from: 'shout' },
      which: { type: 'output', from: 'either' },
      always: { type: 'output', from: 'echo' },
    },
  } as unknown as PipelineDefinition;
  let dep: Published;

  beforeAll(async () => {
    dep = await rt.publishPipeline('branching', branching);
    receiver = await startCallbackReceiver(dep.signingSecret);
  });

  it('takes the branch whose if is true: every output there, in the result and the callback', async () => {
    // Act
    const id = await submit(dep, { score: 7 }, `${receiver.url}/kept`);
    const result = await resultOf(dep, id);
    const callback = await callbackOf('/kept');

    // Assess
    expect(result).toMatchObject({
      status: 'completed',
      response_data: {
        verdict: { value: 'KEPT 7', value_type: 'RAW' },
        loud: { value: 'KEPT 7', value_type: 'RAW' },
        which: { value: 'passed', value_type: 'RAW' },
        always: { value: 7, value_type: 'RAW' },
      },
    });
    expect(callback).toMatchObject({ status: 'completed', signature: 'valid' });
    expect(callback.body).toEqual({ verdict: ['KEPT 7'], loud: ['KEPT 7'], which: ['passed'], always: ['7'], execution_id: id });
  });

  it('goes the other way: the merged output from the other branch, the join on what ran, the skipped output absent from result and callback', async () => {
    // Act
    const id = await submit(dep, { score: 2 }, `${receiver.url}/refused`);
    const result = await resultOf(dep, id);
    const callback = await callbackOf('/refused');
    const owner = await ownerView('branching', id);
    const events = await openSse(`${rt.url}/v1/deployments/executions/${id}/events/`, { 'x-api-key': dep.apiKey });
    await events.ended;

    // Assess
    expect(result.status).toBe('completed');
    expect(result.response_data).toEqual({
      verdict: { value: 'refused 2', value_type: 'RAW' },
      which: { value: 'refused', value_type: 'RAW' },
      always: { value: 2, value_type: 'RAW' },
    });
    expect(callback.body).toEqual({ verdict: ['refused 2'], which: ['refused'], always: ['2'], execution_id: id });
    const outcomes = Object.fromEntries((owner.trace as { node: string; outcome: string }[]).map((t) => [t.node, t.outcome]));
    expect(outcomes).toMatchObject({ passed: 'skipped', shout: 'skipped', loud: 'skipped', refused: 'completed', either: 'completed' });
    const skipped = events.events.filter((e) => e.event === 'node' && (e.data as { state?: string }).state === 'skipped');
    expect(skipped.map((e) => (e.data as { node_id: string }).node_id).sort()).toEqual(['loud', 'passed', 'shout']);
    expect(events.events.filter((e) => e.event === 'output').map((e) => (e.data as { output: string }).output)).not.toContain('loud');
  });

  it("marks the outputs that may be absent in the deployment's contract and OpenAPI, and requires the others once completed", async () => {
    // Act
    const contract = (await rt.caller('GET', `/v1/deployments/${dep.deploymentId}/`, dep.apiKey)).body;
    const doc = (await rt.caller('GET', `/v1/deployments/${dep.deploymentId}/openapi.json`, dep.apiKey)).body as {
      components: {
        schemas: Record<string, { then?: unknown; properties: Record<string, { properties?: Record<string, { description?: string }> }> }>;
      };
    };
    const schema = doc.components.schemas.DeploymentExecutionResult;

    // Assess
    expect(contract.outputs).toEqual([
      { id: 'verdict', value_type: 'RAW', optional: true },
      { id: 'loud', value_type: 'RAW', optional: true },
      { id: 'which', value_type: 'RAW', optional: true },
      { id: 'always', value_type: 'RAW' },
    ]);
    expect(schema?.then).toMatchObject({ properties: { response_data: { required: ['always'] } } });
    expect(schema?.properties.response_data?.properties?.loud?.description).toMatch(/Absent when none of the nodes it comes from ran/);
  });
});

describe('a map over the example job service', () => {
  it('renders 20 items with concurrency 4: the service sees at most 4 jobs open, each item submitted once, the gallery in item order', async () => {
    // Prepare
    const dep = await rt.publishPipeline('map-twenty', mapPipeline());
    await jobs.resetStats();

    // Act
    const id = await submit(dep, { n: 20, seconds: 1.5, prompt: 'twenty harbours' });
    const events = openSse(`${rt.url}/v1/deployments/executions/${id}/events/`, { 'x-api-key': dep.apiKey });
    const result = await resultOf(dep, id);
    const stats = await jobs.stats();
    const gallery = (result.response_data as Record<string, { value: string[]; media_type: string[]; bytes: number[] }>).gallery;
    const shas = await Promise.all(
      (gallery?.value ?? []).map(async (u) =>
        createHash('sha256')
          .update(Buffer.from(await (await fetch(u)).arrayBuffer()))
          .digest('hex'),
      ),
    );
    const made = await Promise.all(Array.from({ length: 20 }, (_, i) => jobs.jobOf(`${id}.renders.${i}`)));
    const reader = await events;
    await reader.ended;
    const items = reader.events.filter((e) => e.event === 'node' && (e.data as { state?: string }).state === 'items');

    // Assess
    expect(result).toMatchObject({ status: 'completed', response_data: { rendered: { value: 20, value_type: 'RAW' } } });
    expect(stats.max_open).toBe(4);
    for (let i = 0; i < 20; i++) expect(stats.submits[`${id}.renders.${i}`]).toBe(1);
    expect(gallery?.value).toHaveLength(20);
    expect(gallery?.media_type).toEqual(Array(20).fill('image/png'));
    // Link i serves the picture of item i's job.
    expect(shas).toEqual(made.map((j) => j?.output?.sha256));
    expect(made.map((j) => j?.prompt)).toEqual(Array.from({ length: 20 }, (_, i) => `twenty harbours ${i}`));
    expect(items.at(-1)?.data).toMatchObject({ node_id: 'renders', type: 'map', items_done: 20, items_total: 20 });
    expect(items.length).toBeLessThanOrEqual(20);
  });

  it('fails the map at the first failed item under "fail", starting no more items', async () => {
    // Prepare: item 2 fails at once while items 0, 1 and 3 take seconds; items 4 and 5 wait for a
    // free place, and none frees before the failure is seen.
    const dep = await rt.publishPipeline(
      'map-fail',
      mapPipeline({}, ", 'fail': index = 2 and n > 2 ? 'out of paint'", '(index = 2 and n > 2 ? 0.1 : seconds)'),
    );

    // Act
    const id = await submit(dep, { n: 6, seconds: 8 });
    const result = await resultOf(dep, id);
    await sleep(3000);

    // Assess
    expect(result).toMatchObject({ status: 'failed', error_message: "Node 'renders' failed: the item at index 2 failed: the job failed" });
    expect((await ownerView('map-fail', id)).error_message).toMatch(
      /^Node 'renders' failed: the item at index 2 failed: the job failed: out of paint/,
    );
    expect(await submitsOf(id, 'renders', 2)).toBe(1);
    expect(await submitsOf(id, 'renders', 4)).toBe(0);
    expect(await submitsOf(id, 'renders', 5)).toBe(0);
  });

  it('holds null in a failed item\'s place under "skip": the gallery and the callback carry null there, the trace says why', async () => {
    // Prepare
    const dep = await rt.publishPipeline(
      'map-skip',
      mapPipeline({ on_item_error: 'skip' }, ", 'fail': index = 1 and n > 2 ? 'out of paint'"),
    );
    const own = await startCallbackReceiver(dep.signingSecret);

    // Act
    const id = await submit(dep, { n: 3, seconds: 0.5 }, `${own.url}/skip`);
    const result = await resultOf(dep, id);
    const callbacks = await waitUntil(
      () => own.received(),
      (cs) => cs.length > 0,
    );
    const owner = await ownerView('map-skip', id);
    await own.close();

    // Assess
    const gallery = (result.response_data as Record<string, { value: (string | null)[]; bytes: (number | null)[] }>).gallery;
    expect(result.status).toBe('completed');
    expect(gallery?.value.map((v) => (v === null ? null : 'link'))).toEqual(['link', null, 'link']);
    expect(gallery?.bytes[1]).toBeNull();
    const body = JSON.parse(callbacks[0]?.body ?? '{}') as { gallery: (string | null)[] };
    // Links are minted afresh for each delivery: the same places, the same files.
    expect(body.gallery.map((v) => (v === null ? null : 'link'))).toEqual(['link', null, 'link']);
    const bytesOf = async (u: string | null | undefined) => (u ? Buffer.from(await (await fetch(u)).arrayBuffer()) : null);
    expect(await Promise.all(body.gallery.map(bytesOf))).toEqual(await Promise.all((gallery?.value ?? []).map(bytesOf)));
    expect((owner.trace as { node: string; item_errors?: unknown }[]).find((t) => t.node === 'renders')?.item_errors).toEqual([
      { index: 1, error: 'the job failed: out of paint' },
    ]);
  });

  it('stops a map cancelled in the middle: no item submitted after the cancel, the execution cancelled', async () => {
    // Prepare
    const dep = await rt.publishPipeline('map-cancel', mapPipeline({ concurrency: 2 }));
    const id = await submit(dep, { n: 12, seconds: 3 });
    await waitUntil(
      () => submitsOf(id, 'renders', 1),
      (n) => n === 1,
    );

    // Act
    const cancelled = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, dep.apiKey);
    const at = await Promise.all(Array.from({ length: 12 }, (_, i) => submitsOf(id, 'renders', i)));
    await sleep(6000);
    const later = await Promise.all(Array.from({ length: 12 }, (_, i) => submitsOf(id, 'renders', i)));
    const result = await resultOf(dep, id);

    // Assess
    expect(cancelled.status).toBe(200);
    expect(result.status).toBe('cancelled');
    expect(later).toEqual(at);
    expect(later.reduce((a, b) => a + b, 0)).toBeLessThan(12);
  });
});

describe('examples/photo-styles.json', () => {
  const example = readFileSync(join(__dirname, '../../examples/photo-styles.json'), 'utf8');
  let dep: Published;

  beforeAll(async () => {
    expect(example).toContain('http://127.0.0.1:4013/v1/');
    const file = JSON.parse(example.replaceAll('http://127.0.0.1:4013', jobs.url)) as Record<string, unknown>;
    dep = await rt.publishPipeline('photo-styles', {
      description: file.description,
      timeout_ms: file.timeout_ms,
      nodes: file.nodes,
    } as PipelineDefinition);
  });

  it('moderates a photo, renders four styles of it in parallel, answers the gallery, and the callback carries the four links', async () => {
    // Prepare
    const own = await startCallbackReceiver(dep.signingSecret);
    const photo = png(40, 40, (x, y) => [x * 6, y * 6, 120, 255]);
    const r = await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions/`, dep.apiKey, {
      workflow_input: {
        photo: { value: photo.toString('base64'), value_type: 'ASSET' },
        styles: { value: 'warm, cool, mono, sepia', value_type: 'RAW' },
      },
      callback: `${own.url}/gallery`,
    });
    const id = r.body.execution_id as string;

    // Act
    const result = await resultOf(dep, id);
    const callbacks = await waitUntil(
      () => own.received(),
      (cs) => cs.length > 0,
    );
    await own.close();
    const gallery = (result.response_data as Record<string, { value: string[] }>).gallery;
    const pictures = await Promise.all((gallery?.value ?? []).map(async (u) => Buffer.from(await (await fetch(u)).arrayBuffer())));
    const styles = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => (await jobs.jobOf(`${id}.variants.${i}`)) as { style?: string } | undefined),
    );

    // Assess
    expect(result).toMatchObject({ status: 'completed', response_data: { summary: { value: '4 styles rendered', value_type: 'RAW' } } });
    expect(gallery?.value).toHaveLength(4);
    expect(pictures.map((p) => pngSize(p))).toEqual(Array(4).fill({ width: 40, height: 40 }));
    expect(styles.map((j) => j?.style)).toEqual(['warm', 'cool', 'mono', 'sepia']);
    expect(callbacks[0]).toMatchObject({ status: 'completed', signature: 'valid' });
    const body = JSON.parse(callbacks[0]?.body ?? '{}') as { gallery: string[] };
    // Links are minted afresh for each delivery: the callback's four serve the same four pictures, in order.
    expect(body).toEqual({ gallery: expect.any(Array), summary: ['4 styles rendered'], execution_id: id });
    const sent = await Promise.all(body.gallery.map(async (u) => Buffer.from(await (await fetch(u)).arrayBuffer())));
    expect(sent).toEqual(pictures);
  });

  it('renders nothing for a photo the check refuses: the gallery absent from the result and the callback, the reason instead', async () => {
    // Prepare
    const own = await startCallbackReceiver(dep.signingSecret);
    const red = png(40, 40, () => [255, 0, 0, 255]);
    const before = (await jobs.stats()).jobs;
    const r = await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions/`, dep.apiKey, {
      workflow_input: { photo: { value: red.toString('base64'), value_type: 'ASSET' } },
      callback: `${own.url}/refused`,
    });
    const id = r.body.execution_id as string;

    // Act
    const result = await resultOf(dep, id);
    const callbacks = await waitUntil(
      () => own.received(),
      (cs) => cs.length > 0,
    );
    await own.close();

    // Assess
    expect(result.response_data).toEqual({ summary: { value: 'refused: the picture is forbidden (all red)', value_type: 'RAW' } });
    expect(JSON.parse(callbacks[0]?.body ?? '{}')).toEqual({ summary: ['refused: the picture is forbidden (all red)'], execution_id: id });
    expect((await jobs.stats()).jobs).toBe(before);
  });
});
