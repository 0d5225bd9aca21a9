/**
 * A typed client from the OpenAPI documents alone, by generators nobody here wrote: against a
 * started runtime, a deployment's document (fetched from it) and docs/openapi.json are turned
 * into types by openapi-typescript; small openapi-fetch clients written only against those
 * types (test/fixtures/typed-client) compile under `--strict` with no casts, then run, and every
 * answer they get is validated against the document with Ajv (JSON Schema 2020-12). The
 * snippets `pipegate publish` shows are compiled and run the same way.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createHash } from 'node:crypto';
import type { PipelineDefinition } from '../../functions/core/types';
import { png } from '../support/media';
import { deploymentSnippets } from '../../functions/core/snippets';
import { CALLER_ROUTES } from '../../lib/routes';
import { createValidator, loadServiceDocument, type JsonObject, type ObservedResponse } from '../support/openapi';
import { startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

/**
 * A deployment's own document holds the routes its key opens, by path (lib/routes.ts), less the
 * uploads route, which only a deployment with an asset input offers (none of this suite's do).
 */
const DEPLOYMENT_DOCUMENT_PATHS = new Set(CALLER_ROUTES.map((r) => r.path.replace(/\/+$/, '')).filter((p) => !p.endsWith('/uploads'))).size;

const FIXTURES = join(__dirname, '..', 'fixtures', 'typed-client');
const ROOT = join(__dirname, '..', '..');
const exec = promisify(execFile);

// Slow enough that a result asked for right after the submit is not ready (409) and a cancel
// finds the execution open, on a loaded machine too.
const PIPELINE: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    times: { type: 'input', value_type: 'integer', value: 1 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    text: { type: 'transform', inputs: ['name', 'times'], expression: "($n := name; $join([1..times].('Hello, ' & $n), ' '))" },
    slow: { type: 'delay', inputs: ['text'], ms: 1500 },
    message: { type: 'output', from: 'slow' },
  },
};

// An ASSET input: what the transform sees of the file proves the bytes arrived whole.
const ASSET_PIPELINE: PipelineDefinition = {
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(1, 1).toString('base64')}`,
      media_types: ['image/png'],
    },
    about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes) & ' ' & photo.sha256" },
    info: { type: 'output', from: 'about' },
    // An ASSET output: its published kind types it as a file in the document.
    kept: { type: 'output', from: 'photo' },
  },
};

// One input of every value type, each taking its published value: the snippets send them all.
const EVERY_TYPE_PIPELINE: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    ratio: { type: 'input', value_type: 'float', value: 0.5 },
    loud: { type: 'input', value_type: 'boolean', value: true },
    page: { type: 'input', value_type: 'reference', value: 'https://example.com/parcels/1' },
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(2, 2).toString('base64')}`,
      media_types: ['image/png'],
    },
    text: {
      type: 'transform',
      inputs: ['name', 'times', 'ratio', 'loud', 'page', 'photo'],
      expression: "name & ' ' & $string(times) & ' ' & $string(ratio) & ' ' & $string(loud) & ' ' & $string(page) & ' ' & photo.media_type",
    },
    message: { type: 'output', from: 'text' },
  },
};

let rt: TestRuntime;
let published: Published;
let everyPublished: Published;
let everyDoc: JsonObject;
let assetPublished: Published;
let assetDoc: JsonObject;
let dir: string;
let deploymentDoc: JsonObject;
const serviceDoc = loadServiceDocument();
const seconds: Record<string, number> = {};

/** A fetch that keeps every answer, so each can be validated against the document after the run. */
function recordingFetch(into: ObservedResponse[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const url = new URL(request.url);
    into.push({
      method: request.method,
      path: `${url.pathname}${url.search}`,
      status: response.status,
      headers: response.headers,
      text: await response.clone().text(),
    });
    return response;
  };
}

const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
  const start = performance.now();
  try {
    return await fn();
  } finally {
    seconds[name] = Math.round(performance.now() - start) / 1000;
  }
};

let diagnostics: string[] = [];

beforeAll(async () => {
  rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CANCEL_POLL_MS: '50' } });
  published = await rt.publishPipeline('typed-client', PIPELINE, { inputs: { loud: { visible: false } } });
  const doc = await rt.caller<JsonObject>('GET', `/v1/deployments/${published.deploymentId}/openapi.json`, published.apiKey);
  if (doc.status !== 200) throw new Error(`document: ${doc.status} ${doc.text}`);
  deploymentDoc = doc.body;
  assetPublished = await rt.publishPipeline('typed-assets', ASSET_PIPELINE);
  const assets = await rt.caller<JsonObject>('GET', `/v1/deployments/${assetPublished.deploymentId}/openapi.json`, assetPublished.apiKey);
  if (assets.status !== 200) throw new Error(`asset document: ${assets.status} ${assets.text}`);
  assetDoc = assets.body;
  everyPublished = await rt.publishPipeline('typed-every', EVERY_TYPE_PIPELINE);
  const every = await rt.caller<JsonObject>('GET', `/v1/deployments/${everyPublished.deploymentId}/openapi.json`, everyPublished.apiKey);
  if (every.status !== 200) throw new Error(`every-type document: ${every.status} ${every.text}`);
  everyDoc = every.body;

  dir = mkdtempSync(join(tmpdir(), 'pipegate-typed-client-'));
  const src = join(dir, 'src');
  mkdirSync(src);
  // The compiled clients find openapi-fetch (and tsc its types) as any project would.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const f of readdirSync(FIXTURES)) copyFileSync(join(FIXTURES, f), join(src, f));

  await timed('generate types', async () => {
    writeFileSync(join(dir, 'deployment.json'), JSON.stringify(deploymentDoc));
    writeFileSync(join(dir, 'service.json'), JSON.stringify(serviceDoc));
    writeFileSync(join(dir, 'assets.json'), JSON.stringify(assetDoc));
    writeFileSync(join(dir, 'every.json'), JSON.stringify(everyDoc));
    mkdirSync(join(src, 'every'));
    await exec(process.execPath, [
      join(__dirname, '..', 'support', 'openapi-types.mjs'),
      ...[
        // A deployment's document with openapi-typescript's defaults, as the publish snippet says.
        join(dir, 'deployment.json'),
        join(src, 'api.ts'),
        join(dir, 'assets.json'),
        join(src, 'asset-api.ts'),
        join(dir, 'every.json'),
        join(src, 'every', 'api.ts'),
        // docs/openapi.json as the README says: its defaults are what an absent field means.
        '--default-non-nullable=false',
        join(dir, 'service.json'),
        join(src, 'service-api.ts'),
      ],
    ]);
  });
  // The id a caller would paste in; a const, so the paths it builds keep their literal types.
  writeFileSync(join(src, 'deployment.ts'), `export const DEPLOYMENT_ID = ${JSON.stringify(published.deploymentId)};\n`);
  writeFileSync(join(src, 'asset-deployment.ts'), `export const ASSET_DEPLOYMENT_ID = ${JSON.stringify(assetPublished.deploymentId)};\n`);
  writeFileSync(join(src, 'snippet.ts'), deploymentSnippets(deploymentDoc).typescript);
  // As a caller pastes it beside the types of its own deployment's document.
  writeFileSync(join(src, 'every', 'snippet.ts'), deploymentSnippets(everyDoc).typescript);

  diagnostics = await timed('compile', () => {
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(src, f));
    const worker = new Worker(join(__dirname, '..', 'support', 'compile-strict.mjs'), {
      workerData: { files, src, outDir: join(dir, 'out'), root: ROOT },
    });
    return new Promise<string[]>((resolve, reject) => {
      worker.once('message', (lines: string[]) => resolve(lines));
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the compile worker exited with ${code} before answering`)));
    });
  });
});

afterAll(async () => {
  // The figures this suite costs: `npx jest test/e2e/generated-client.test.ts`.
  process.stdout.write(`generated-client timings (s): ${JSON.stringify(seconds)}\n`);
  if (dir) rmSync(dir, { recursive: true, force: true });
  await rt?.cleanup();
});

/** Requires a compiled module from the temp dir (its `run` export). */
const load = <T>(name: string): T => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module is compiled at test time
  return require(join(dir, 'out', `${name}.js`)) as T;
};

describe('typed clients generated from the documents alone', () => {
  it('compile under --strict: the clients, the publish snippet, and every misuse is refused', () => {
    expect(diagnostics).toEqual([]);
  });

  it("a deployment's client: contract, a bad input, execute, 409 result, cancel twice, waiting, status; every answer as its document says", async () => {
    // Prepare
    const observed: ObservedResponse[] = [];
    const { run } = load<{ run: (base: string, key: string, f: typeof fetch) => Promise<Record<string, unknown>> }>('deployment-client');

    // Act
    const out = await timed('deployment client', () => run(rt.url, published.apiKey, recordingFetch(observed)));

    // Assess
    expect(out).toEqual({
      inputs: ['name:string', 'times:integer'],
      badStatus: 422,
      badDetail: expect.stringContaining('times'),
      accepted: 202,
      location: true,
      earlyStatus: expect.stringMatching(/^(pending|running)$/),
      cancelled: 'cancelled',
      againStatus: 'cancelled',
      cancelledResult: 'cancelled',
      cancelledOutputs: [],
      waitedStatus: 200,
      message: 'Hello, Grace Hello, Grace',
      duration: expect.any(Number),
      documentPaths: DEPLOYMENT_DOCUMENT_PATHS,
    });
    const validator = createValidator(deploymentDoc);
    expect(observed.length).toBe(10);
    expect(observed.flatMap((r) => validator.check(r))).toEqual([]);
  });

  it("an ASSET input's client: a file inline and one through the uploads route; every answer as its document says", async () => {
    // Prepare
    const observed: ObservedResponse[] = [];
    const bytes = png(9, 9);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const { run } = load<{
      run: (base: string, key: string, f: typeof fetch, put: typeof fetch, png: Uint8Array) => Promise<Record<string, unknown>>;
    }>('asset-client');

    // Act
    const out = await timed('asset client', () => run(rt.url, assetPublished.apiKey, recordingFetch(observed), fetch, bytes));

    // Assess
    expect(out).toEqual({
      inputs: ['photo:asset'],
      inline: `image/png ${bytes.length} ${sha}`,
      keptType: 'image/png',
      keptBytes: bytes.length,
      keptLink: expect.stringContaining(`${rt.url}/v1/assets/`),
      uploadStatus: 201,
      stored: 200,
      uploaded: `image/png ${bytes.length} ${sha}`,
    });
    const validator = createValidator(assetDoc);
    expect(observed.length).toBe(4);
    expect(observed.flatMap((r) => validator.check(r))).toEqual([]);
  });

  it('a client of the whole service: owner push (and a refused one), list, then the caller operations; every answer as docs/openapi.json says', async () => {
    // Prepare
    const observed: ObservedResponse[] = [];
    const { run } = load<{
      run: (base: string, owner: string, key: string, id: string, f: typeof fetch) => Promise<Record<string, unknown>>;
    }>('service-client');

    // Act
    const out = await timed('service client', () =>
      run(rt.url, rt.ownerToken, published.apiKey, published.deploymentId, recordingFetch(observed)),
    );

    // Assess
    expect(out).toEqual({
      pushed: 1,
      problems: expect.arrayContaining([expect.stringContaining('out')]),
      listed: expect.arrayContaining(['typed-client', 'typed-client-push']),
      inputs: ['name', 'times'],
      badStatus: 422,
      badDetail: expect.stringContaining('nope'),
      earlyStatus: expect.stringMatching(/^(pending|running)$/),
      cancelled: 'cancelled',
      againStatus: 'cancelled',
      status: 'cancelled',
      result: 'cancelled',
      documentPaths: DEPLOYMENT_DOCUMENT_PATHS,
      unknown: 'Execution Not Found',
    });
    const validator = createValidator(serviceDoc);
    expect(observed.length).toBe(13);
    expect(observed.flatMap((r) => validator.check(r))).toEqual([]);
  });

  it('the snippets publish shows run as they are: TypeScript (compiled above), Python with requests, curl', async () => {
    // Prepare
    const env = { ...process.env, PIPEGATE_API_KEY: published.apiKey };
    const snippets = deploymentSnippets(deploymentDoc);

    // Act: all three at once; each waits for its execution to finish.
    const [typescript, python, curl] = await timed('snippets', () =>
      Promise.all([
        exec(process.execPath, [join(dir, 'out', 'snippet.js')], { env }),
        exec('python3', ['-c', snippets.python], { env }),
        exec('sh', ['-c', snippets.curl], { env }),
      ]),
    );

    // Assess
    expect(typescript.stdout.trim()).toBe('completed {"message":{"value":"Hello, world","value_type":"RAW"}}');
    expect(python.stdout.trim()).toBe("completed {'message': {'value': 'Hello, world', 'value_type': 'RAW'}}");
    expect(JSON.parse(curl.stdout)).toMatchObject({ status: 'queued', deployment_id: published.deploymentId });
  });

  it('the snippets of a deployment with an input of every value type (string, integer, float, boolean, reference, asset) run as printed: each gets 202 and its execution completes', async () => {
    // Prepare
    const env = { ...process.env, PIPEGATE_API_KEY: everyPublished.apiKey };
    const snippets = deploymentSnippets(everyDoc);
    const expected = `world 2 0.5 true https://example.com/parcels/1 image/png`;

    // Act
    const [typescript, python, curl] = await timed('every-type snippets', () =>
      Promise.all([
        exec(process.execPath, [join(dir, 'out', 'every', 'snippet.js')], { env }),
        exec('python3', ['-c', snippets.python], { env }),
        exec('sh', ['-c', snippets.curl], { env }),
      ]),
    );

    // Assess: the TypeScript and Python snippets wait for the result themselves; curl's answer is the 202's body.
    expect(typescript.stdout.trim()).toBe(`completed ${JSON.stringify({ message: { value: expected, value_type: 'RAW' } })}`);
    expect(python.stdout.trim()).toBe(`completed {'message': {'value': '${expected}', 'value_type': 'RAW'}}`);
    const accepted = JSON.parse(curl.stdout) as { status: string; execution_id: string };
    expect(accepted).toMatchObject({ status: 'queued', deployment_id: everyPublished.deploymentId });
    const done = await rt.waitForExecution(accepted.execution_id, everyPublished.apiKey);
    expect(done).toMatchObject({ status: 'completed' });
  });
});
