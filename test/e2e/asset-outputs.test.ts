/**
 * ASSET outputs over real HTTP on the local runtime (its S3 emulation included; again against
 * start:synth in test/e2e/synth/asset-outputs.test.ts), with real PNG
 * and JPEG bytes: an asset input passed through to an output, an http node whose upstream
 * answers a PNG (and an SVG), an http node sending an asset as its raw body; the result's
 * link serving the exact bytes, a fresh link on each read, the callback's `[url]`, hidden
 * asset outputs absent from result and callback.
 */
import { createHash } from 'node:crypto';
import { nodeLinkTtlSeconds } from '../../functions/core/asset-links';
import type { PipelineDefinition, WorkflowType } from '../../functions/core/types';
import { executionTimeoutMsOf, WORKFLOW_TYPES } from '../../functions/core/workflow-type';
import { startTestServer, type ReceivedRequest, type TestServer } from '../support/http-server';
import { dataUri, jpeg, png, svg } from '../support/media';
import { startReceiver, type Receiver } from '../support/receiver';
import { readConfig } from '../../lib/config';
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../lib/workflow-budget';
import { startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

let rt: E2eRuntime;
let upstream: TestServer;
let receiver: Receiver;
const received: ReceivedRequest[] = [];
const thumbnail = png(8, 8, (x, y) => [255 - x * 20, y * 20, 60, 255]);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const asset = (value: string) => ({ value, value_type: 'ASSET' });

type AssetOut = { value: string; value_type: string; media_type: string; bytes: number; expires_at: string };

beforeAll(async () => {
  upstream = await startTestServer((req, res) => {
    received.push(req);
    if (req.path === '/thumbnail') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(thumbnail);
    } else if (req.path === '/drawing') {
      res.writeHead(200, { 'content-type': 'image/svg+xml' });
      res.end(svg());
    } else if (req.path === '/fetch') {
      // An outside service handed a file's URL in a JSON body: fetches it as anyone would.
      const { image } = JSON.parse(req.body) as { image: { url: string; expires_at: string } };
      void fetch(image.url).then(async (got) => {
        const bytes = Buffer.from(await got.arrayBuffer());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            status: got.status,
            sha256: sha(bytes),
            content_type: got.headers.get('content-type'),
            url: image.url,
            expires_at: image.expires_at,
          }),
        );
      });
    } else if (req.path === '/echo') {
      // Answers the bytes it was sent, with the type it was sent as.
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/octet-stream') });
      res.end(req.raw);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  receiver = await startReceiver(0);
  rt = await startE2eRuntime();
});
afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
  await receiver?.close();
});

const executions = (p: Published) => `/v1/deployments/${p.deploymentId}/executions/`;

async function finished(p: Published, body: Record<string, unknown>) {
  const r = await rt.caller('POST', executions(p), p.apiKey, body);
  expect(r.status).toBe(202);
  const id = r.body.execution_id as string;
  await rt.waitForExecution(id, p.apiKey);
  const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey);
  return {
    id,
    result: result.body as {
      status: string;
      error_message: string | null;
      response_data: Record<string, AssetOut | { value: unknown; value_type: 'RAW' }>;
    },
  };
}

async function download(url: string) {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('an asset input passed through', () => {
  const def: PipelineDefinition = {
    nodes: {
      photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)), media_types: ['image/*'] },
      copy: { type: 'transform', inputs: ['photo'], expression: 'photo' },
      kept: { type: 'output', from: 'photo' },
      private_copy: { type: 'output', from: 'copy' },
      size: { type: 'transform', inputs: ['photo'], expression: 'photo.bytes' },
      bytes: { type: 'output', from: 'size' },
    },
  };
  let p: Published;
  beforeAll(async () => {
    p = await rt.publishPipeline('asset-pass', def, { outputs: { private_copy: { visible: false } } });
  });

  it('answers a JPEG in with a link to the same bytes out, a fresh link on each read, and keeps the hidden asset output out of reach', async () => {
    // Prepare
    const bytes = Buffer.concat([jpeg(), Buffer.alloc(20_000, 7)]);

    // Act
    const { id, result } = await finished(p, { workflow_input: { photo: asset(bytes.toString('base64')) } });
    const again = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey)).body as typeof result;
    const kept = result.response_data.kept as AssetOut;
    const served = await download(kept.value);

    // Assess
    expect(result.status).toBe('completed');
    expect(Object.keys(result.response_data).sort()).toEqual(['bytes', 'kept']);
    expect(kept).toEqual({
      value: expect.stringContaining(`${rt.url}/v1/assets/`),
      value_type: 'ASSET',
      media_type: 'image/jpeg',
      bytes: bytes.length,
      expires_at: expect.any(String),
    });
    expect(Date.parse(kept.expires_at)).toBeGreaterThan(Date.now());
    expect(served.status).toBe(200);
    expect(served.bytes.equals(bytes)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/jpeg');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    // Minted again on this read (the same token within the same second: links carry whole seconds).
    const second = again.response_data.kept as AssetOut;
    expect(Date.parse(second.expires_at)).toBeGreaterThanOrEqual(Date.parse(kept.expires_at));
    expect((await download(second.value)).bytes.equals(bytes)).toBe(true);
    expect(JSON.stringify(again)).not.toContain('private_copy');
  });

  it("answers HEAD on a link with GET's status and headers and no body; an altered link 404", async () => {
    // Prepare
    const bytes = png(6, 6);
    const { result } = await finished(p, { workflow_input: { photo: asset(bytes.toString('base64')) } });
    const url = (result.response_data.kept as AssetOut).value;
    // Act
    const byGet = await download(url);
    const byHead = await fetch(url, { method: 'HEAD' });
    const altered = await fetch(`${url.slice(0, -1)}${url.endsWith('A') ? 'B' : 'A'}`, { method: 'HEAD' });
    // Assess
    expect(byHead.status).toBe(200);
    expect(Buffer.from(await byHead.arrayBuffer()).length).toBe(0);
    for (const h of ['content-length', 'content-type', 'content-disposition', 'x-content-type-options', 'accept-ranges', 'cache-control']) {
      expect({ h, v: byHead.headers.get(h) }).toEqual({ h, v: byGet.headers.get(h) });
    }
    expect(byHead.headers.get('content-length')).toBe(String(bytes.length));
    expect(altered.status).toBe(404);
  });

  it('answers the asset in the `Prefer: wait` answer too', async () => {
    const r = await rt.caller<{ status: string; response_data: Record<string, AssetOut> }>(
      'POST',
      executions(p),
      p.apiKey,
      { workflow_input: { photo: asset(png(4, 4).toString('base64')) } },
      { prefer: 'wait=20' },
    );
    expect(r.status).toBe(200);
    const kept = r.body.response_data.kept;
    expect(kept?.media_type).toBe('image/png');
    expect((await download(kept?.value ?? '')).bytes.equals(png(4, 4))).toBe(true);
  });

  it('sends the callback a list holding a link that serves the bytes, and nothing of the hidden asset output', async () => {
    // Prepare
    const bytes = png(6, 6);

    // Act
    const { id } = await finished(p, { workflow_input: { photo: asset(bytes.toString('base64')) }, callback: receiver.url });
    const hook = await waitUntil(
      async () => receiver.delivered().find((h) => h.executionId === id),
      (h) => h !== undefined,
    );
    const payload = JSON.parse(hook?.body ?? '{}') as Record<string, unknown>;
    const [url] = payload.kept as string[];

    // Assess
    expect(Object.keys(payload).sort()).toEqual(['bytes', 'execution_id', 'kept']);
    expect(payload.bytes).toEqual([String(bytes.length)]);
    expect(url).toContain(`${rt.url}/v1/assets/`);
    const served = await download(url ?? '');
    expect(served.bytes.equals(bytes)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/png');
  });

  it('shows the owner every asset output, the hidden one included, with links', async () => {
    const { id } = await finished(p, { workflow_input: { photo: asset(png(2, 2).toString('base64')) } });
    const view = await rt.owner<{ output_assets: Record<string, AssetOut> }>('GET', `/v1/pipelines/asset-pass/executions/${id}`);
    expect(Object.keys(view.body.output_assets).sort()).toEqual(['kept', 'private_copy']);
    expect((await download(view.body.output_assets.private_copy?.value ?? '')).bytes.equals(png(2, 2))).toBe(true);
  });
});

describe('a made-up asset reference', () => {
  it("fails the execution rather than link to another deployment's object named by a transform", async () => {
    // Prepare: a real link to an asset output of another deployment, and its exact description.
    const owner = await rt.publishPipeline('asset-victim', {
      nodes: {
        photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) },
        kept: { type: 'output', from: 'photo' },
      },
    });
    const bytes = png(5, 5);
    const victim = (await finished(owner, { workflow_input: { photo: asset(bytes.toString('base64')) } })).result.response_data
      .kept as AssetOut;
    const def: PipelineDefinition = {
      nodes: {
        link: { type: 'input', value_type: 'string', value: 'x' },
        // The published run (default value) answers text; a caller's link makes the forged object.
        forged: {
          type: 'transform',
          inputs: ['link'],
          expression: `link = "x" ? "ok" : {"url": link, "media_type": "image/png", "bytes": ${bytes.length}, "sha256": "${sha(bytes)}"}`,
        },
        stolen: { type: 'output', from: 'forged' },
      },
    };
    const p = await rt.publishPipeline('asset-thief', def);

    // Act
    const { result } = await finished(p, { workflow_input: { link: { value: victim.value, value_type: 'RAW' } } });

    // Assess
    expect(result.status).toBe('failed');
    expect(result.response_data).toEqual({});
    expect(result.error_message).toBe("Node 'stolen' failed: it produced no usable value");
  });
});

describe('http nodes and assets', () => {
  it('stores a PNG answer as an asset output with its sniffed type, size and hash', async () => {
    // Prepare
    const def: PipelineDefinition = {
      nodes: {
        thumb: { type: 'http', url: `${upstream.origin}/thumbnail` },
        hash: { type: 'transform', inputs: ['thumb'], expression: 'thumb.sha256' },
        image: { type: 'output', from: 'thumb' },
        sha256: { type: 'output', from: 'hash' },
      },
    };
    const p = await rt.publishPipeline('asset-answer', def);

    // Act
    const { result } = await finished(p, {});
    const image = result.response_data.image as AssetOut;
    const served = await download(image.value);

    // Assess
    expect(result.response_data.sha256).toEqual({ value: sha(thumbnail), value_type: 'RAW' });
    expect(image).toMatchObject({ value_type: 'ASSET', media_type: 'image/png', bytes: thumbnail.length });
    expect(served.bytes.equals(thumbnail)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/png');
  });

  it('serves an SVG answer as an attachment', async () => {
    const p = await rt.publishPipeline('asset-svg', {
      nodes: { draw: { type: 'http', url: `${upstream.origin}/drawing` }, drawing: { type: 'output', from: 'draw' } },
    });
    const { result } = await finished(p, {});
    const drawing = result.response_data.drawing as AssetOut;
    const served = await download(drawing.value);
    expect(drawing.media_type).toBe('image/svg+xml');
    expect(served.bytes.equals(svg())).toBe(true);
    expect(served.headers.get('content-disposition')).toMatch(/^attachment/);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it("hands an outside service a link to this service's asset route that serves the bytes and lasts the run's time-out plus the margin", async () => {
    // Prepare
    const def: PipelineDefinition = {
      nodes: {
        photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) },
        hand: { type: 'http', method: 'POST', url: `${upstream.origin}/fetch`, inputs: ['photo'], body: '{"image": photo}' },
        seen: { type: 'transform', inputs: ['hand'], expression: '$string(hand)' },
        fetched: { type: 'output', from: 'seen' },
      },
    };
    const p = await rt.publishPipeline('asset-hand', def);
    const bytes = png(7, 5);
    const before = Math.floor(Date.now() / 1000);

    // Act
    const { id, result } = await finished(p, { workflow_input: { photo: asset(bytes.toString('base64')) } });

    // Assess
    expect(result.status).toBe('completed');
    const seen = JSON.parse(String((result.response_data.fetched as { value: string }).value)) as {
      status: number;
      sha256: string;
      content_type: string;
      url: string;
      expires_at: string;
    };
    expect(seen).toMatchObject({ status: 200, sha256: sha(bytes), content_type: 'image/png' });
    expect(seen.url.startsWith(`${rt.url}/v1/assets/v1.`)).toBe(true);
    // The token binds the expiry the node was told: the run's time-out plus the margin. The
    // definition sets no timeout_ms, so the time-out is the default (npm start's, which the
    // stack start:synth serves sets too), held within what Express allows when the execution
    // runs on the Express state machine, as the owner's view of it says.
    const payload = seen.url.split('/v1/assets/')[1]?.split('.')[1] ?? '';
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[])[3] as number;
    expect(new Date(exp * 1000).toISOString()).toBe(seen.expires_at);
    const view = await rt.owner('GET', `/v1/pipelines/asset-hand/executions/${id}`);
    expect(view.status).toBe(200);
    const workflow = view.body.workflow as WorkflowType;
    expect(WORKFLOW_TYPES).toContain(workflow);
    const timeoutMs = executionTimeoutMsOf(def, workflow, readConfig({}).executionTimeoutMs, EXPRESS_MAX_EXECUTION_TIMEOUT_MS);
    const ttl = nodeLinkTtlSeconds(timeoutMs);
    expect(exp).toBeGreaterThanOrEqual(before + ttl);
    expect(exp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + ttl);
  });

  it('sends an asset as its raw body: the upstream receives the exact bytes and Content-Type', async () => {
    // Prepare
    const def: PipelineDefinition = {
      nodes: {
        photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) },
        send: { type: 'http', method: 'POST', url: `${upstream.origin}/echo`, inputs: ['photo'], body_asset: 'photo' },
        echoed: { type: 'output', from: 'send' },
      },
    };
    const p = await rt.publishPipeline('asset-send', def);
    const bytes = jpeg();
    received.length = 0;

    // Act
    const { result } = await finished(p, { workflow_input: { photo: asset(bytes.toString('base64')) } });

    // Assess
    const sent = received.find((r) => r.path === '/echo');
    expect(sent?.raw.equals(bytes)).toBe(true);
    expect(sent?.headers['content-type']).toBe('image/jpeg');
    const echoed = result.response_data.echoed as AssetOut;
    expect(echoed).toMatchObject({ value_type: 'ASSET', media_type: 'image/jpeg', bytes: bytes.length });
    expect((await download(echoed.value)).bytes.equals(bytes)).toBe(true);
  });
});
