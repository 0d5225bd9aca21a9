/**
 * The pipelines in examples/ work as a newcomer would use them: each is pushed (only its
 * description and nodes, as the CLI sends), every test of its `tests` block is run and must
 * produce its `expect`, it is published with its `publish` block, and a caller executes it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { deploymentSnippets } from '../../functions/core/snippets';
import { startCallbackReceiver, startImageJobs, pngSize, type ImageJobs } from '../support/image-jobs';
import { jpeg, png } from '../support/media';
import { greeting, request, startTestRuntime, waitUntil, type TestRuntime } from '../support/runtime';

const ROOT = join(__dirname, '..', '..');
const EXAMPLES = join(ROOT, 'examples');

interface ExampleTest {
  name: string;
  inputs: Record<string, string | number | boolean>;
  expect: Record<string, string | number | boolean>;
}
interface Visibility {
  inputs?: Record<string, { visible: boolean }>;
  outputs?: Record<string, { visible: boolean }>;
  waits?: Record<string, { visible: boolean }>;
}
interface ExampleFile {
  description: string;
  timeout_ms?: number;
  nodes: Record<string, Record<string, unknown>>;
  publish?: Visibility;
  tests?: ExampleTest[];
}

const readExample = (file: string): ExampleFile => {
  const text = readFileSync(join(EXAMPLES, file), 'utf8');
  return (file.endsWith('.json') ? JSON.parse(text) : parse(text)) as ExampleFile;
};

/** What the service receives: the CLI strips the pipelines-as-code blocks. */
const definition = (f: ExampleFile) => ({ description: f.description, nodes: f.nodes });

const execFileAsync = promisify(execFile);

let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime();
});

afterAll(async () => {
  await rt?.cleanup();
});

const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

/**
 * push → every test run → publish with the file's visibility, checking each step; returns the
 * deployment. The last test of each example uses the current values, so those become the
 * published defaults (a publish takes the values of the latest run).
 */
async function pushTestPublish(id: string, f: ExampleFile) {
  const pushed = await rt.owner('PUT', `/v1/pipelines/${id}`, definition(f));
  expect({ status: pushed.status, body: pushed.body }).toEqual({
    status: 201,
    body: {
      pipeline_id: id,
      version: 1,
      created: true,
      workflow: expect.stringMatching(/^(express|standard)$/) as unknown as string,
      workflow_reason: expect.any(String) as unknown as string,
    },
  });

  expect(f.tests?.length).toBeGreaterThan(0);
  for (const t of f.tests ?? []) {
    const run = await rt.runToEnd(id, t.inputs);
    expect({ test: t.name, status: run.status, error: run.error_message }).toEqual({ test: t.name, status: 'completed', error: null });
    const outputs = run.outputs as Record<string, unknown>;
    expect({ test: t.name, outputs: pick(outputs, Object.keys(t.expect)) }).toEqual({ test: t.name, outputs: t.expect });
  }

  expect((await rt.owner('GET', `/v1/pipelines/${id}/deployment`)).body).toMatchObject({ state: 'not_published', publishable: true });
  const published = await rt.owner('PUT', `/v1/pipelines/${id}/deployment`, f.publish ?? {});
  expect(published.status).toBe(201);
  return { deploymentId: published.body.deployment_id as string, apiKey: published.body.api_key as string };
}

async function execute(deploymentId: string, key: string, inputs: Record<string, string | number | boolean>) {
  const workflow_input = Object.fromEntries(Object.entries(inputs).map(([k, value]) => [k, { value, value_type: 'RAW' }]));
  const accepted = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, { workflow_input });
  expect(accepted.status).toBe(202);
  const id = accepted.body.execution_id as string;
  await rt.waitForExecution(id, key);
  return (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, key)).body;
}

const raw = (o: Record<string, string | number | boolean>) =>
  Object.fromEntries(Object.entries(o).map(([k, value]) => [k, { value, value_type: 'RAW' }]));

/**
 * The caller's view must list exactly the entries the file's publish block leaves visible, with
 * the nodes' values; every output of the examples checked this way answers a value (RAW).
 */
function expectedContract(deploymentId: string, f: ExampleFile) {
  const hidden = (section: 'inputs' | 'outputs', id: string) => f.publish?.[section]?.[id]?.visible === false;
  const nodes = Object.entries(f.nodes);
  return {
    deployment_id: deploymentId,
    inputs: nodes
      .filter(([id, n]) => n.type === 'input' && !hidden('inputs', id))
      .map(([id, n]) => ({ id, value_type: n.value_type, value: n.value })),
    outputs: nodes.filter(([id, n]) => n.type === 'output' && !hidden('outputs', id)).map(([id]) => ({ id, value_type: 'RAW' })),
    waits: [],
  };
}

describe('examples/greeting.json', () => {
  const file = readExample('greeting.json');
  const asCode = readExample('as-code/greeting.yaml');

  it('is the greeting of the pipeline format, with nothing the service would refuse', () => {
    expect(Object.keys(file).sort()).toEqual(['description', 'nodes']);
    expect(file).toEqual(greeting);
  });

  it('has a pipelines-as-code twin with the same pipeline, a publish block and tests', () => {
    expect(definition(asCode)).toEqual(file);
    expect(asCode.publish).toBeDefined();
    expect(asCode.tests?.length).toBeGreaterThan(0);
  });

  it('is accepted as `curl --data @examples/greeting.json` sends it, runs, publishes and greets a caller', async () => {
    // Prepare: curl's --data @file drops the file's line breaks.
    const sent = readFileSync(join(EXAMPLES, 'greeting.json'), 'utf8').replace(/[\r\n]/g, '');

    // Act
    const pushed = await request(`${rt.url}/v1/pipelines/greeting`, 'PUT', sent, {
      authorization: `Bearer ${rt.ownerToken}`,
      'content-type': 'application/json',
    });
    const tests = [];
    for (const t of asCode.tests ?? [])
      tests.push([t.name, ((await rt.runToEnd('greeting', t.inputs)).outputs as Record<string, unknown>).message, t.expect.message]);
    const published = await rt.owner('PUT', '/v1/pipelines/greeting/deployment', asCode.publish);
    const deploymentId = published.body.deployment_id as string;
    const key = published.body.api_key as string;
    const contract = await rt.caller('GET', `/v1/deployments/${deploymentId}/`, key);
    const result = await execute(deploymentId, key, { name: 'Grace' });

    // Assess
    expect(pushed.status).toBe(201);
    for (const [name, got, wanted] of tests) expect({ test: name, got }).toEqual({ test: name, got: wanted });
    expect(published.status).toBe(201);
    expect(contract.body).toEqual(expectedContract(deploymentId, asCode));
    expect(result).toMatchObject({ status: 'completed', response_data: { message: { value: 'Hello, Grace!', value_type: 'RAW' } } });
  });
});

describe('examples/postcard.json', () => {
  const file = readExample('postcard.json');

  it('runs, publishes with a form, and the curl snippet publish prints (a picture and a web address among its inputs) runs as printed', async () => {
    // Prepare
    const pushed = await rt.owner('PUT', '/v1/pipelines/postcard', definition(file));
    expect(pushed.status).toBe(201);
    const run = await rt.runToEnd('postcard', {});
    expect({ status: run.status, back: (run.outputs as Record<string, unknown>).back }).toEqual({
      status: 'completed',
      back: 'Greetings from the sea (1 copies)',
    });
    const published = await rt.owner('PUT', '/v1/pipelines/postcard/deployment', { form: { enabled: true, title: 'Make a postcard' } });
    expect(published.status).toBe(201);
    const { deployment_id: deploymentId, api_key: apiKey } = published.body as { deployment_id: string; api_key: string };
    const doc = await rt.caller('GET', `/v1/deployments/${deploymentId}/openapi.json`, apiKey);

    // Act: the curl line, through a shell, as a caller pastes it.
    const curl = await execFileAsync('sh', ['-c', deploymentSnippets(doc.body).curl], {
      env: { ...process.env, PIPEGATE_API_KEY: apiKey },
    });
    const accepted = JSON.parse(curl.stdout) as { status: string; execution_id: string };
    await rt.waitForExecution(accepted.execution_id, apiKey);
    const result = await rt.caller('GET', `/v1/deployments/executions/${accepted.execution_id}/result/`, apiKey);

    // Assess
    expect(accepted.status).toBe('queued');
    expect(result.body).toMatchObject({ status: 'completed', error_message: null });
    const data = result.body.response_data as Record<string, { value: unknown; value_type: string; media_type?: string }>;
    expect(data.back).toEqual({ value: 'Greetings from the sea (1 copies)', value_type: 'RAW' });
    expect(data.more).toEqual({ value: 'https://example.com/places/the-sea', value_type: 'RAW' });
    expect(data.front).toMatchObject({ value_type: 'ASSET', media_type: 'image/png' });
    expect(published.body.form_url).toMatch(/\/v1\/forms\/pgf_/);
  });
});

describe('examples/text-stats.json', () => {
  const file = readExample('text-stats.json');

  it("passes its tests, publishes with debug_words and title_words hidden, and measures a caller's text", async () => {
    // Act
    const { deploymentId, apiKey } = await pushTestPublish('text-stats', file);
    const contract = await rt.caller('GET', `/v1/deployments/${deploymentId}/`, apiKey);
    const result = await execute(deploymentId, apiKey, { text: 'Hello there, pipegate users!', words_per_minute: 100 });
    const hidden = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, apiKey, {
      workflow_input: raw({ title_words: 2 }),
    });

    // Assess
    expect(contract.body).toEqual(expectedContract(deploymentId, file));
    expect(result).toMatchObject({ status: 'completed', error_message: null });
    expect(result.response_data).toEqual(
      raw({
        word_count: 4,
        character_count: 28,
        longest_word: 'pipegate',
        reading_seconds: 3,
        reading_time: 'under a minute',
        title: 'HELLO THERE PIPEGATE USERS',
      }),
    );
    expect(hidden.status).toBe(422);
  });

  it('fails a run with a reason when the reading speed is zero', async () => {
    const run = await rt.runToEnd('text-stats', { words_per_minute: 0 });
    expect(run.status).toBe('failed');
    expect(run.error_message).toMatch(/estimate_seconds.*words_per_minute must be greater than 0/);
  });
});

describe('examples/shipping-quote.json with examples/servers/shipping-rates.mjs', () => {
  const file = readExample('shipping-quote.json');
  let server: ChildProcess;
  let serverUrl: string;
  let serverLog = '';

  beforeAll(async () => {
    // The server as a newcomer starts it (`node examples/servers/shipping-rates.mjs`), on a free port.
    server = spawn(process.execPath, [join(EXAMPLES, 'servers', 'shipping-rates.mjs')], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout?.on('data', (c: Buffer) => (serverLog += c.toString()));
    server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
    serverUrl = await waitUntil(
      async () => /listening on (http:\/\/\S+)/.exec(serverLog)?.[1] ?? '',
      (url) => url !== '',
    );
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it("points its http node at the rates server's default address", () => {
    expect(file.nodes.quote).toMatchObject({ type: 'http', method: 'POST', url: 'http://127.0.0.1:4010/quote' });
  });

  it('passes its tests against the server, publishes with raw_response hidden, and quotes for a caller', async () => {
    // Prepare: the same pipeline, its url on the port the server took.
    const local: ExampleFile = { ...file, nodes: { ...file.nodes, quote: { ...file.nodes.quote, url: `${serverUrl}/quote` } } };

    // Act
    const { deploymentId, apiKey } = await pushTestPublish('shipping-quote', local);
    const contract = await rt.caller('GET', `/v1/deployments/${deploymentId}/`, apiKey);
    const result = await execute(deploymentId, apiKey, { weight_kg: 5, destination: 'jp', express: true });

    // Assess
    expect(contract.body).toEqual(expectedContract(deploymentId, local));
    expect(result).toMatchObject({ status: 'completed', error_message: null });
    expect(result.response_data).toEqual(
      raw({ price: 70.2, currency: 'EUR', delivery_days: 4, summary: 'pipegate parcel to JP: 70.20 EUR, 4 working days' }),
    );
    expect(serverLog).toContain('POST /quote {"weight_kg":5,"destination":"JP","express":true} → 200');
  });

  it('fails the run, naming the http node, when the rates API refuses the request', async () => {
    const run = await rt.runToEnd('shipping-quote', { weight_kg: 0 });
    expect(run.status).toBe('failed');
    expect(run.error_message).toMatch(/Node 'quote' failed: HTTP 422/);
  });
});

describe('examples/thumbnail.json with examples/servers/thumbnail.mjs', () => {
  const file = readExample('thumbnail.json');
  let server: ChildProcess;
  let serverUrl: string;
  let serverLog = '';

  beforeAll(async () => {
    server = spawn(process.execPath, [join(EXAMPLES, 'servers', 'thumbnail.mjs')], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout?.on('data', (c: Buffer) => (serverLog += c.toString()));
    server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
    serverUrl = await waitUntil(
      async () => /listening on (http:\/\/\S+)/.exec(serverLog)?.[1] ?? '',
      (url) => url !== '',
    );
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it("points its http node at the image service's default address and sends the photo as its body", () => {
    expect(file.nodes.resize).toMatchObject({
      type: 'http',
      method: 'POST',
      url: 'http://127.0.0.1:4012/thumbnail?size=64',
      body_asset: 'photo',
    });
  });

  it("turns a caller's 200×120 PNG into a 64×38 PNG served by its link, and refuses a JPEG", async () => {
    // Prepare: the same pipeline, its url on the port the server took.
    const local = {
      description: file.description,
      nodes: { ...file.nodes, resize: { ...file.nodes.resize, url: `${serverUrl}/thumbnail?size=64` } },
    };
    const pushed = await rt.owner('PUT', '/v1/pipelines/thumbnail', local);
    const run = await rt.runToEnd('thumbnail');
    const published = await rt.owner('PUT', '/v1/pipelines/thumbnail/deployment', {});
    const deploymentId = published.body.deployment_id as string;
    const key = published.body.api_key as string;
    const photo = png(200, 120);

    // Act
    const accepted = await rt.caller(
      'POST',
      `/v1/deployments/${deploymentId}/executions/`,
      key,
      { workflow_input: { photo: { value: photo.toString('base64'), value_type: 'ASSET' } } },
      { prefer: 'wait=20' },
    );
    const thumbnail = (accepted.body.response_data as Record<string, { value: string; media_type: string; bytes: number }>).thumbnail;
    const served = await fetch(thumbnail?.value ?? '');
    const bytes = Buffer.from(await served.arrayBuffer());
    const refused = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, {
      workflow_input: { photo: { value: jpeg().toString('base64'), value_type: 'ASSET' } },
    });

    // Assess
    expect(pushed.status).toBe(201);
    expect(run.status).toBe('completed');
    expect(published.status).toBe(201);
    expect(accepted.status).toBe(200);
    expect(thumbnail).toMatchObject({ value_type: 'ASSET', media_type: 'image/png', bytes: bytes.length });
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(pngSize(bytes)).toEqual({ width: 64, height: 38 });
    expect((accepted.body.response_data as Record<string, unknown>).thumbnail_bytes).toEqual({ value: bytes.length, value_type: 'RAW' });
    expect(serverLog).toContain('200×120 → 200 64×38');
    expect(refused.status).toBe(422);
  });
});

describe('examples/render-job.json with examples/servers/image-jobs.mjs', () => {
  const file = readExample('render-job.json');
  let jobs: ImageJobs;

  beforeAll(async () => {
    jobs = await startImageJobs();
  });

  afterAll(async () => {
    await jobs?.close();
  });

  it("points its http node at the job service's default address, polls the url the submit answers, and may take an hour", () => {
    expect(file.nodes.render).toMatchObject({
      type: 'http',
      method: 'POST',
      url: 'http://127.0.0.1:4013/v1/jobs',
      poll: { url: 'url', done: "status in ['succeeded', 'failed']", failed: "status = 'failed'" },
    });
    expect(file).toMatchObject({ timeout_ms: 3_600_000 });
  });

  it("passes its tests against the job service, publishes, and renders a caller's picture by polling the job", async () => {
    // Prepare: the same pipeline, its url on the port the service took.
    const local: ExampleFile = { ...file, nodes: { ...file.nodes, render: { ...file.nodes.render, url: `${jobs.url}/v1/jobs` } } };

    // Act
    const { deploymentId, apiKey } = await pushTestPublish('render-job', local);
    const result = await execute(deploymentId, apiKey, { prompt: 'an owl at night', seconds: 2, size: 64 });
    const picture = (result.response_data as Record<string, { value: string; media_type: string; bytes: number }>).picture;
    const bytes = Buffer.from(await (await fetch(picture?.value ?? '')).arrayBuffer());
    const executionId = String(result.execution_id);

    // Assess
    expect(result).toMatchObject({ status: 'completed', error_message: null });
    expect(picture).toMatchObject({ value_type: 'ASSET', media_type: 'image/png', bytes: bytes.length });
    expect(pngSize(bytes)).toEqual({ width: 64, height: 64 });
    expect((await jobs.stats()).submits[`${executionId}.render`]).toBe(1);
    expect(jobs.log()).toMatch(/→ succeeded, the image/);
  });
});

describe('examples/photo-styles.json with examples/servers/image-jobs.mjs', () => {
  const file = readExample('photo-styles.json');
  let jobs: ImageJobs;

  beforeAll(async () => {
    jobs = await startImageJobs({ RETRY_AFTER_MAX_S: '1' });
  });

  afterAll(async () => {
    await jobs?.close();
  });

  it("points its check and its map's jobs at the job service's default address, and renders only what the check approved", () => {
    expect(file.nodes.check).toMatchObject({ type: 'http', url: 'http://127.0.0.1:4013/v1/moderate', body_asset: 'photo' });
    expect(file.nodes.variants).toMatchObject({
      type: 'map',
      if: "check.verdict = 'approved'",
      concurrency: 4,
      node: { type: 'http', url: 'http://127.0.0.1:4013/v1/jobs' },
    });
    expect(file.nodes.summary).toMatchObject({ type: 'output', from: ['rendered', 'refused'] });
  });

  it('passes its tests against the job service (a refused photo, the default one rendered), publishes, and answers the gallery of four', async () => {
    // Prepare: the same pipeline, its URLs on the port the service took.
    const local = JSON.parse(JSON.stringify(file).replaceAll('http://127.0.0.1:4013', jobs.url)) as ExampleFile;

    // Act
    const { deploymentId, apiKey } = await pushTestPublish('photo-styles', local);
    const result = await execute(deploymentId, apiKey, { styles: 'invert, poster, warm, cool' });
    const gallery = (result.response_data as Record<string, { value: string[]; media_type: string[] }>).gallery;
    const first = Buffer.from(await (await fetch(gallery?.value[0] ?? '')).arrayBuffer());

    // Assess
    expect(result).toMatchObject({ status: 'completed', response_data: { summary: { value: '4 styles rendered', value_type: 'RAW' } } });
    expect(gallery?.media_type).toEqual(['image/png', 'image/png', 'image/png', 'image/png']);
    expect(pngSize(first)).toEqual({ width: 48, height: 48 });
  });
});

describe('examples/approve-render.json with examples/servers/image-jobs.mjs', () => {
  const file = readExample('approve-render.json');
  let jobs: ImageJobs;

  beforeAll(async () => {
    jobs = await startImageJobs();
  });

  afterAll(async () => {
    await jobs?.close();
  });

  interface Waiting {
    node_id: string;
    resume_url: string;
  }

  it('hands the job its resume URL as its callback, hides that wait from callers, and waits a day for the approval', () => {
    expect(file.nodes.submit).toMatchObject({ type: 'http', url: 'http://127.0.0.1:4013/v1/jobs' });
    expect(String(file.nodes.submit?.body)).toContain("'callback_url': $resume_url('rendered')");
    expect(file.nodes.approval).toMatchObject({ type: 'wait', inputs: ['rendered'], timeout_ms: 86_400_000 });
    expect(file.publish).toEqual({ waits: { rendered: { visible: false } } });
  });

  it('runs (the job calls back, the owner approves), publishes, and a caller with curl sees waiting, approves, gets the result and the signed callback', async () => {
    // Prepare: the same pipeline, its url on the port the service took.
    const local = { ...file, nodes: { ...file.nodes, submit: { ...file.nodes.submit, url: `${jobs.url}/v1/jobs` } } };
    const sent = { description: local.description, timeout_ms: local.timeout_ms, nodes: local.nodes };
    expect((await rt.owner('PUT', '/v1/pipelines/approve-render', sent)).status).toBe(201);

    // The owner's run: the job calls back by itself; the owner approves it.
    const run = await rt.owner('POST', '/v1/pipelines/approve-render/runs', {});
    const runPath = `/v1/pipelines/approve-render/runs/${String(run.body.run_id)}`;
    const runWaiting = await waitUntil(
      () => rt.owner('GET', runPath),
      (r) => (r.body.waiting as Waiting[] | undefined)?.some((w) => w.node_id === 'approval') === true,
    );
    const ownerUrl = (runWaiting.body.waiting as Waiting[]).find((w) => w.node_id === 'approval')?.resume_url ?? '';
    expect((await request(ownerUrl, 'POST', { approved: true, note: '' }, {})).status).toBe(202);
    const ran = await waitUntil(
      () => rt.owner('GET', runPath),
      (r) => r.body.status === 'completed',
    );
    const published = await rt.owner('PUT', '/v1/pipelines/approve-render/deployment', file.publish);
    expect(published.status).toBe(201);
    const {
      deployment_id: dep,
      api_key: key,
      signing_secret: secret,
    } = published.body as { deployment_id: string; api_key: string; signing_secret: string };
    const receiver = await startCallbackReceiver(secret);
    try {
      // Act: as the README's curl commands do.
      const accepted = await rt.caller('POST', `/v1/deployments/${dep}/executions/`, key, {
        callback: `${receiver.url}/approved`,
        workflow_input: { prompt: { value: 'an owl at night', value_type: 'RAW' }, seconds: { value: 2, value_type: 'RAW' } },
      });
      const id = accepted.body.execution_id as string;
      const waiting = await waitUntil(
        () => rt.caller('GET', `/v1/deployments/executions/${id}/status/`, key),
        (r) => Array.isArray(r.body.waiting),
      );
      const url = (waiting.body.waiting as Waiting[])[0]?.resume_url ?? '';
      const resumed = await execFileAsync('sh', [
        '-c',
        `curl -s -X POST "${url}" -H 'Content-Type: application/json' -d '{"approved": true, "note": "lovely"}'`,
      ]);
      await rt.waitForExecution(id, key);
      const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, key);
      const callbacks = await waitUntil(
        () => receiver.received(),
        (cs) => cs.length > 0,
      );
      const job = await jobs.jobOf(`${id}.submit`);

      // Assess
      expect(ran.body.outputs).toMatchObject({ verdict: 'approved' });
      expect((waiting.body.waiting as Waiting[]).map((w) => w.node_id)).toEqual(['approval']);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'resumed', node_id: 'approval' });
      expect(result.body).toMatchObject({
        status: 'completed',
        response_data: { verdict: { value: 'approved: lovely' }, picture_url: { value: job?.output?.image_url } },
      });
      expect(callbacks[0]).toMatchObject({ path: '/approved', status: 'completed', signature: 'valid' });
      expect((await jobs.stats()).submits[`${id}.submit`]).toBe(1);
      const png = Buffer.from(await (await fetch(job?.output?.image_url ?? '')).arrayBuffer());
      expect(pngSize(png)).toEqual({ width: 128, height: 128 });
    } finally {
      await receiver.close();
    }
  });
});
