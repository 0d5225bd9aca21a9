/**
 * Assets in the engine: an asset input passed on to an output, an http node's binary answer
 * stored as an asset, an asset sent as an http node's raw body, and a transform that makes up
 * an asset reference (refused: no reference to an object the run does not hold).
 */
import { createHash } from 'node:crypto';
import { runPipelineTraced, type AssetView, type EngineObjects, type EngineOptions } from '../../../functions/core/engine';
import { HTTP_ASSET_MAX_BYTES } from '../../../functions/core/output-assets';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort, HttpRequest, HttpResponse, ObjectRef, SizedStream } from '../../../functions/core/ports';
import type { PipelineDefinition, PipelineNode } from '../../../functions/core/types';
import { dataUri, jpeg, png } from '../../support/media';

function definition(nodes: Record<string, PipelineNode>): PipelineDefinition {
  const result = validateDefinition({ nodes });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const photoBytes = png(3, 3);
const photoRef: ObjectRef = { key: 'd/dep/e/exec/in.photo', media_type: 'image/png', bytes: photoBytes.length, sha256: sha(photoBytes) };
const photoView: AssetView = {
  url: 'http://127.0.0.1:9/in.photo?sig=1',
  media_type: 'image/png',
  bytes: photoBytes.length,
  sha256: sha(photoBytes),
  expires_at: '2030-01-01T00:00:00.000Z',
};

async function collect(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts);
}

async function* chunked(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** Storage as the task provides it, in memory: what was stored and read. */
function memoryObjects() {
  const stored = new Map<string, { bytes: Uint8Array; declared: string | undefined }>([
    [photoRef.key, { bytes: photoBytes, declared: 'image/png' }],
  ]);
  const reads: string[] = [];
  const limits: number[] = [];
  const objects: EngineObjects = {
    async store(name, body, declared, maxBytes) {
      limits.push(maxBytes);
      const bytes = await collect(body);
      const key = `d/dep/e/exec/${name}`;
      stored.set(key, { bytes, declared });
      const mediaType = bytes[0] === 0xff ? 'image/jpeg' : 'image/png';
      const ref = { key, media_type: mediaType, bytes: bytes.length, sha256: sha(bytes) };
      return {
        ref,
        view: {
          url: `http://127.0.0.1:9/${name}?sig=2`,
          media_type: mediaType,
          bytes: bytes.length,
          sha256: ref.sha256,
          expires_at: '2030-01-01T00:00:00.000Z',
        },
      };
    },
    async open(ref) {
      reads.push(ref.key);
      const o = stored.get(ref.key);
      if (!o) throw new Error('gone');
      return { bytes: o.bytes.length, stream: chunked(o.bytes, 2) };
    },
  };
  return { objects, stored, reads, limits };
}

const photoInput: PipelineNode = { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) };

function opts(http: HttpPort, objects: EngineObjects, over: Partial<EngineOptions> = {}): EngineOptions {
  return { http, timeoutMs: 60_000, assets: { photo: photoView }, assetRefs: { photo: photoRef }, objects, ...over };
}

const noHttp: HttpPort = async () => {
  throw new Error('no http expected');
};

describe('ASSET outputs', () => {
  it('passes an asset input to an output as its stored reference, directly or rebuilt by a transform', async () => {
    // Prepare
    const def = definition({
      photo: photoInput,
      same: { type: 'transform', inputs: ['photo'], expression: 'photo' },
      rebuilt: {
        type: 'transform',
        inputs: ['photo'],
        expression: '{"url": photo.url, "media_type": photo.media_type, "bytes": photo.bytes, "sha256": photo.sha256}',
      },
      a: { type: 'output', from: 'photo' },
      b: { type: 'output', from: 'same' },
      c: { type: 'output', from: 'rebuilt' },
    });

    // Act
    const { result, trace } = await runPipelineTraced(def, {}, opts(noHttp, memoryObjects().objects));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: {}, output_assets: { a: photoRef, b: photoRef, c: photoRef } });
    // The owner's trace shows what the output is, never the URL.
    expect(trace.find((t) => t.node === 'a')?.preview).toBe(`{"value_type":"ASSET","media_type":"image/png","bytes":${photoBytes.length}}`);
  });

  it.each([
    [
      "a URL the run does not hold (another execution's link)",
      '{"url": "http://127.0.0.1:9/v1/assets/v1.forged.tag", "media_type": "image/png", "bytes": 1, "sha256": photo.sha256}',
    ],
    ['a held URL with another size', '{"url": photo.url, "media_type": photo.media_type, "bytes": 1, "sha256": photo.sha256}'],
    ['a held URL with another media type', '{"url": photo.url, "media_type": "text/html"}'],
    ['an object naming a storage key', '{"key": "d/other/e/x/in.photo", "media_type": "image/png", "bytes": 10, "sha256": photo.sha256}'],
  ])('refuses a transform result that makes up an asset: %s', async (_name, expression) => {
    // Prepare
    const def = definition({
      photo: photoInput,
      forged: { type: 'transform', inputs: ['photo'], expression },
      out: { type: 'output', from: 'forged' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts(noHttp, memoryObjects().objects));

    // Assess
    expect(result).toMatchObject({
      status: 'failed',
      error_message: "Node 'out' failed: output must be a string, a finite number, a boolean or an asset of this run, got object",
    });
  });

  it('treats an asset input as nothing special when the task gave no reference for it', async () => {
    const def = definition({ photo: photoInput, out: { type: 'output', from: 'photo' } });
    const { result } = await runPipelineTraced(def, {}, opts(noHttp, memoryObjects().objects, { assetRefs: {} }));
    expect(result.status).toBe('failed');
  });
});

describe('http nodes and assets', () => {
  it('stores a binary answer as an asset of the run, which an output then refers to', async () => {
    // Prepare
    const answer = jpeg();
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req);
      return { status: 200, headers: { 'content-type': 'image/jpeg' }, body: '', stream: chunked(answer, 100) } satisfies HttpResponse;
    };
    const mem = memoryObjects();
    const def = definition({
      thumb: { type: 'http', method: 'GET', url: 'http://127.0.0.1:9/thumb' },
      size: { type: 'transform', inputs: ['thumb'], expression: 'thumb.bytes' },
      image: { type: 'output', from: 'thumb' },
      bytes: { type: 'output', from: 'size' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts(http, mem.objects));

    // Assess
    expect(seen[0]?.maxBinaryResponseBytes).toBe(HTTP_ASSET_MAX_BYTES);
    expect(mem.limits).toEqual([HTTP_ASSET_MAX_BYTES]);
    expect(Buffer.from(mem.stored.get('d/dep/e/exec/node.thumb')?.bytes ?? []).equals(answer)).toBe(true);
    expect(mem.stored.get('d/dep/e/exec/node.thumb')?.declared).toBe('image/jpeg');
    expect(result).toEqual({
      status: 'completed',
      outputs: { bytes: answer.length },
      output_assets: { image: { key: 'd/dep/e/exec/node.thumb', media_type: 'image/jpeg', bytes: answer.length, sha256: sha(answer) } },
    });
  });

  it('fails on a non-2xx binary answer without reading or storing its body, and ends it', async () => {
    // Prepare
    let read = 0;
    let ended = false;
    const body: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          read++;
          return { done: false, value: new Uint8Array(10) };
        },
        return: async () => {
          ended = true;
          return { done: true, value: undefined };
        },
      }),
    };
    const http: HttpPort = async () => ({ status: 502, headers: { 'content-type': 'image/png' }, body: '', stream: body });
    const mem = memoryObjects();
    const def = definition({ thumb: { type: 'http', url: 'http://127.0.0.1:9/thumb' }, out: { type: 'output', from: 'thumb' } });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts(http, mem.objects));

    // Assess
    expect(result).toMatchObject({ status: 'failed', caller_message: "Node 'thumb' failed: upstream answered 502" });
    expect({ read, ended, stored: mem.limits.length }).toEqual({ read: 0, ended: true, stored: 0 });
  });

  it('keeps a JSON answer a value, and asks for no binary allowance without storage', async () => {
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req);
      return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"n":1}' };
    };
    const def = definition({
      call: { type: 'http', url: 'http://127.0.0.1:9/' },
      n: { type: 'transform', inputs: ['call'], expression: 'call.n' },
      out: { type: 'output', from: 'n' },
    });
    const { result } = await runPipelineTraced(def, {}, { http, timeoutMs: 60_000 });
    expect(result).toEqual({ status: 'completed', outputs: { out: 1 } });
    expect(seen[0]?.maxBinaryResponseBytes).toBeUndefined();
  });

  it('sends an asset as the raw body, read from storage, with its media type', async () => {
    // Prepare
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req);
      return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' };
    };
    const mem = memoryObjects();
    const def = definition({
      photo: photoInput,
      send: { type: 'http', method: 'POST', url: 'http://127.0.0.1:9/upload', inputs: ['photo'], body_asset: 'photo' },
      out: { type: 'output', from: 'send' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts(http, mem.objects));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: 'ok' } });
    expect(mem.reads).toEqual([photoRef.key]);
    const sent = seen[0]?.body as SizedStream;
    expect(sent.bytes).toBe(photoBytes.length);
    expect(Buffer.from(await collect(sent.stream)).equals(photoBytes)).toBe(true);
    expect(seen[0]?.headers['content-type']).toBe('image/png');
  });

  it('fails the node when body_asset names a value that is not an asset of the run', async () => {
    const def = definition({
      text: { type: 'input', value_type: 'string', value: 'x' },
      send: { type: 'http', method: 'POST', url: 'http://127.0.0.1:9/upload', inputs: ['text'], body_asset: 'text' },
      out: { type: 'output', from: 'send' },
    });
    const { result } = await runPipelineTraced(def, {}, opts(noHttp, memoryObjects().objects));
    expect(result).toMatchObject({ status: 'failed', error_message: "Node 'send' failed: body_asset 'text' is not an asset" });
  });
});

describe('body_asset validation', () => {
  it.each([
    [
      { type: 'http', method: 'POST', url: 'http://x.test/', inputs: ['photo'], body_asset: 'photo', body: 'photo' },
      'cannot be given with body: the request carries one or the other',
    ],
    [
      { type: 'http', url: 'http://x.test/', inputs: ['photo'], body_asset: 'photo' },
      'a GET request cannot carry a body; use POST, PUT, PATCH or DELETE',
    ],
    [{ type: 'http', method: 'POST', url: 'http://x.test/', inputs: [], body_asset: 'photo' }, "must be one of the node's inputs"],
  ])('refuses %j', (node, reason) => {
    const result = validateDefinition({ nodes: { photo: photoInput, send: node, out: { type: 'output', from: 'send' } } });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems).toContainEqual({ path: 'nodes.send.body_asset', reason });
  });
});
