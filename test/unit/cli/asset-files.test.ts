/**
 * Files on the command line against a fake service on 127.0.0.1 (a real HTTP server standing
 * in for pipegate and its object storage): `--input id=@file` inline or through an upload on
 * execute and on run (the deployment's or the pipeline's uploads route); `result --download` saving ASSET outputs (the documented result
 * shape); the local refusals (missing, unreadable, too large) and the service's (422, 410).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFINITION_ASSET_MAX_BYTES, INLINE_ASSET_BODY_MAX_BYTES, UPLOAD_MAX_BYTES } from '../../../functions/core/assets';
import { dataUriLength, PROGRESS_MIN_BYTES, splitBySize, TransferProgress, type SniffedFile } from '../../../lib/cli/asset-files';
import { extensionFor, mediaTypeForName } from '../../../lib/cli/media-types';
import type { CliIO } from '../../../lib/cli/output';
import { runCli } from '../../../lib/cli/program';
import { jpeg, mp4, png } from '../../support/media';

const DEP = '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e';
const EXEC = '0b7c9d2e-1111-4a2b-8c3d-4e5f60718293';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** What the fake answers; tests change it. */
interface FakeState {
  contract: unknown;
  uploadStatus: number;
  uploadBody?: unknown;
  /** response_data of the result. */
  responseData: Record<string, unknown>;
  assets: Map<string, { status: number; body: Buffer; declared?: number }>;
  puts: Map<string, Buffer>;
}

let server: Server;
let origin: string;
let seen: Seen[];
let state: FakeState;
let dir: string;

function answer(req: Seen, res: ServerResponse): void {
  const send = (status: number, body?: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  if (req.method === 'GET' && req.path === `/v1/deployments/${DEP}/`) return send(200, state.contract);
  if (req.method === 'POST' && req.path === `/v1/deployments/${DEP}/uploads/`) {
    if (state.uploadStatus !== 201) return send(state.uploadStatus, state.uploadBody);
    const { media_type, bytes } = JSON.parse(req.body.toString()) as { media_type: string; bytes: number };
    const id = randomUUID();
    return send(201, {
      upload_url: `${origin}/bucket/d/${DEP}/u/${id}?X-Amz-Signature=abc`,
      method: 'PUT',
      headers: { 'content-type': media_type, 'content-length': String(bytes) },
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      asset: { value: `upload:${id}`, value_type: 'ASSET' },
    });
  }
  if (req.method === 'PUT' && req.path.startsWith('/bucket/')) {
    if (Number(req.headers['content-length']) !== req.body.length) {
      res.writeHead(403, { 'content-type': 'application/xml' });
      return void res.end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
    }
    state.puts.set(req.path, req.body);
    res.writeHead(200);
    return void res.end();
  }
  if (req.method === 'POST' && req.path === `/v1/deployments/${DEP}/executions/`) {
    return send(202, { status: 'queued', status_url: `${origin}/s`, result_url: `${origin}/r`, deployment_id: DEP, execution_id: EXEC });
  }
  if (req.method === 'GET' && req.path === `/v1/deployments/executions/${EXEC}/status/`) {
    return send(200, { status: 'completed', execution_id: EXEC, deployment_id: DEP, error_message: null, completion_duration: 5 });
  }
  if (req.method === 'GET' && req.path === `/v1/deployments/executions/${EXEC}/result/`) {
    return send(200, {
      status: 'completed',
      execution_id: EXEC,
      deployment_id: DEP,
      completion_duration: 5,
      output_artifacts: [],
      error_message: null,
      response_data: state.responseData,
    });
  }
  const asset = state.assets.get(req.path);
  if (req.method === 'GET' && asset) {
    res.writeHead(asset.status, {
      'content-type': 'application/octet-stream',
      'content-length': String(asset.declared ?? asset.body.length),
    });
    return void res.end(asset.body);
  }
  if (req.method === 'GET' && req.path === '/v1/pipelines/photos') {
    return send(200, {
      pipeline_id: 'photos',
      version: 1,
      definition: {
        nodes: {
          photo: { type: 'input', value_type: 'asset', value: 'data:image/png;base64,AA==' },
          out: { type: 'output', from: 'photo' },
        },
      },
    });
  }
  if (req.method === 'POST' && req.path === '/v1/pipelines/photos/uploads') {
    if (state.uploadStatus !== 201) return send(state.uploadStatus, state.uploadBody);
    const { media_type, bytes } = JSON.parse(req.body.toString()) as { media_type: string; bytes: number };
    const id = randomUUID();
    return send(201, {
      upload_url: `${origin}/bucket/p/photos/u/${id}?X-Amz-Signature=abc`,
      method: 'PUT',
      headers: { 'content-type': media_type, 'content-length': String(bytes) },
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      asset: { value: `upload:${id}`, value_type: 'ASSET' },
    });
  }
  if (req.method === 'POST' && req.path === '/v1/pipelines/photos/runs') return send(202, { run_id: 'r-1', version: 1, status: 'pending' });
  send(599, { error: `unscripted ${req.method} ${req.path}` });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(s);
      answer(s, res);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
});

const assetContract = {
  deployment_id: DEP,
  inputs: [
    { id: 'photo', value_type: 'asset', value: 'data:image/png;base64,AA==', media_types: ['image/png', 'image/jpeg'] },
    { id: 'caption', value_type: 'string', value: 'hi' },
  ],
  outputs: [{ id: 'thumb' }],
};

beforeEach(() => {
  seen = [];
  state = { contract: assetContract, uploadStatus: 201, responseData: {}, assets: new Map(), puts: new Map() };
  dir = mkdtempSync(join(tmpdir(), 'pipegate-cli-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[], opts: { tty?: boolean } = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), ...(opts.tty ? { isTTY: true } : {}) },
    env: { PIPEGATE_URL: origin, PIPEGATE_OWNER_TOKEN: 'pgo_test', NO_COLOR: '1' },
    cwd: dir,
    sleep: async () => undefined,
  };
  const code = await runCli(args, io, {});
  return { code, stdout, stderr };
}

const executeBody = () => {
  const post = seen.find((s) => s.method === 'POST' && s.path.endsWith('/executions/'));
  return post ? (JSON.parse(post.body.toString()) as { workflow_input: Record<string, { value: string; value_type: string }> }) : undefined;
};

/** A PNG of about `size` bytes: a real 1×1 image with zeros after it (sniffing reads the head). */
const bigPng = (size: number) => Buffer.concat([png(1, 1), Buffer.alloc(size - png(1, 1).length)]);

describe('execute --input id=@file', () => {
  it('sends a small file inline as a data URI of its sniffed type, beside the other inputs', async () => {
    // Prepare
    const bytes = jpeg();
    writeFileSync(join(dir, 'cat.png'), bytes); // named .png, but the bytes are a JPEG

    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@cat.png', '-i', 'caption=@home']);

    // Assess
    expect(r.code).toBe(0);
    expect(executeBody()?.workflow_input).toStrictEqual({
      photo: { value: `data:image/jpeg;base64,${bytes.toString('base64')}`, value_type: 'ASSET' },
      caption: { value: '@home', value_type: 'RAW' },
    });
    expect(seen.some((s) => s.path.includes('/uploads/'))).toBe(false);
  });

  it('uploads a file that would take the request over the inline limit: POST uploads, PUT with exactly the answered headers, then the upload value', async () => {
    // Prepare
    const bytes = bigPng(INLINE_ASSET_BODY_MAX_BYTES);
    writeFileSync(join(dir, 'big.png'), bytes);

    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@big.png']);

    // Assess
    expect(r.code).toBe(0);
    const create = seen.find((s) => s.path === `/v1/deployments/${DEP}/uploads/`);
    expect(JSON.parse(create?.body.toString() ?? '{}')).toStrictEqual({ media_type: 'image/png', bytes: bytes.length });
    expect(create?.headers['x-api-key']).toBe('k');
    const put = seen.find((s) => s.method === 'PUT');
    expect(put?.headers['content-type']).toBe('image/png');
    expect(put?.headers['content-length']).toBe(String(bytes.length));
    // The upload URL is not the API: no key travels with the bytes.
    expect(put?.headers['x-api-key']).toBeUndefined();
    expect(put?.body.equals(bytes)).toBe(true);
    expect(executeBody()?.workflow_input.photo?.value).toMatch(/^upload:[0-9a-f-]{36}$/);
    // Progress for a large file, a line per quarter when stderr is not a terminal.
    expect(r.stderr).toContain('uploading big.png 0%');
    expect(r.stderr).toContain('uploading big.png 100% (4.2 MB of 4.2 MB)');
    expect(r.stderr).toContain(`uploaded big.png (image/png, ${bytes.length} bytes) for photo`);
  });

  it("shows the 422 detail when the uploads route refuses the file's type", async () => {
    // Prepare
    writeFileSync(join(dir, 'clip.mp4'), Buffer.concat([mp4(), Buffer.alloc(INLINE_ASSET_BODY_MAX_BYTES)]));
    state.uploadStatus = 422;
    state.uploadBody = {
      error: 'Invalid Input',
      detail: "no asset input takes 4194396 bytes of video/mp4: 'photo' accepts image/png or image/jpeg",
    };

    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@clip.mp4']);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no asset input takes 4194396 bytes of video/mp4: 'photo' accepts image/png or image/jpeg");
    expect(r.stderr).toContain('hint: --input photo=@clip.mp4: the file is video/mp4 (by its bytes)');
    expect(seen.some((s) => s.method === 'PUT' || s.path.endsWith('/executions/'))).toBe(false);
  });

  it('says what storage refused, never the signed URL', async () => {
    // Prepare: the fake answers a content-length of one byte fewer than the file.
    writeFileSync(join(dir, 'big.png'), bigPng(INLINE_ASSET_BODY_MAX_BYTES));
    const realAnswer = state;
    realAnswer.uploadStatus = 201;
    const original = server.listeners('request')[0] as (req: IncomingMessage, res: ServerResponse) => void;
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === 'PUT') {
        req.resume();
        res.writeHead(403, { 'content-type': 'application/xml' });
        return void res.end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
      }
      original(req, res);
    });

    // Act
    let r;
    try {
      r = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@big.png']);
    } finally {
      server.removeAllListeners('request');
      server.on('request', original);
    }

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: the upload of big.png was refused: HTTP 403 SignatureDoesNotMatch');
    expect(r.stderr).not.toContain('X-Amz-Signature');
  });

  it('refuses a missing, unreadable, empty or oversize file before any request, naming the input, the file and the limit', async () => {
    // Prepare
    writeFileSync(join(dir, 'empty.png'), '');
    writeFileSync(join(dir, 'secret.png'), png());
    chmodSync(join(dir, 'secret.png'), 0o000);
    mkdirSync(join(dir, 'photos'));
    const unreadable = process.getuid?.() !== 0; // root reads anything

    // Act
    const missing = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@nope.png']);
    // Root reads anything: the permission case runs only where it can happen.
    const locked = unreadable ? await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@secret.png']) : undefined;
    const empty = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@empty.png']);
    const folder = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@photos']);
    const bare = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@']);

    // Assess
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('error: --input photo=@nope.png: no such file: nope.png');
    if (locked) expect(locked.stderr).toContain('error: --input photo=@secret.png: cannot read secret.png: permission denied');
    expect(empty.stderr).toContain('empty.png is empty; an asset needs at least one byte');
    expect(folder.stderr).toContain('photos is a directory; give a file');
    expect(bare.stderr).toContain('give a file after @');
    expect(seen.every((s) => s.method === 'GET')).toBe(true);
  });

  it('refuses a file over the largest upload, naming the limit', async () => {
    // Prepare: a sparse file, so the test writes nothing near 100 MiB.
    const path = join(dir, 'huge.mov');
    writeFileSync(path, '');
    const { truncateSync } = await import('node:fs');
    truncateSync(path, UPLOAD_MAX_BYTES + 1);

    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '-i', 'photo=@huge.mov']);

    // Assess
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`huge.mov is ${UPLOAD_MAX_BYTES + 1} bytes, over the largest upload: ${UPLOAD_MAX_BYTES} bytes (100 MiB)`);
  });
});

describe('splitBySize', () => {
  const file = (input: string, bytes: number): SniffedFile => ({ input, shown: input, path: input, bytes, mediaType: 'image/png' });

  it('keeps everything inline up to the limit exactly, and uploads the largest file one byte over it', () => {
    // Prepare
    const a = file('a', 3000);
    const b = file('b', 30_000);
    const other = 100;
    const atLimit = other + dataUriLength(a) + dataUriLength(b);

    // Act
    const fits = splitBySize([a, b], other, atLimit);
    const over = splitBySize([a, b], other + 1, atLimit);

    // Assess
    expect(fits).toStrictEqual({ inline: [a, b], upload: [] });
    expect(over).toStrictEqual({ inline: [a], upload: [b] });
    expect(splitBySize([a, b], atLimit, atLimit).upload).toStrictEqual([a, b]);
  });
});

describe('splitBySize, for any files and limit', () => {
  it('places every file once, keeps the inline request within the limit whenever any file stays inline, and uploads only files at least as large as every inline one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 10_000_000 }), { maxLength: 8 }),
        fc.nat(1000),
        fc.integer({ min: 0, max: 20_000_000 }),
        (sizes, other, max) => {
          const files = sizes.map((bytes, i): SniffedFile => ({
            input: `f${i}`,
            shown: `f${i}`,
            path: `f${i}`,
            bytes,
            mediaType: 'image/png',
          }));
          const { inline, upload } = splitBySize(files, other, max);
          expect([...inline, ...upload].map((f) => f.input).sort()).toStrictEqual(files.map((f) => f.input).sort());
          if (inline.length > 0) expect(other + inline.reduce((n, f) => n + dataUriLength(f), 0)).toBeLessThanOrEqual(max);
          const largestInline = Math.max(0, ...inline.map((f) => f.bytes));
          expect(upload.every((f) => f.bytes >= largestInline)).toBe(true);
        },
      ),
    );
  });
});

describe('TransferProgress and media types', () => {
  it('redraws one line on a terminal, a line per quarter elsewhere, and nothing for a small file', () => {
    // Prepare
    let tty = '';
    let log = '';
    let small = '';
    const onTty = new TransferProgress({ write: (t: string) => (tty += t), isTTY: true }, 'uploading', 'a.png', 2_000_000);
    const offTty = new TransferProgress({ write: (t: string) => (log += t) }, 'uploading', 'a.png', 2_000_000);
    const tiny = new TransferProgress({ write: (t: string) => (small += t), isTTY: true }, 'uploading', 'a.png', PROGRESS_MIN_BYTES - 1);

    // Act
    for (let i = 0; i < 20; i++) {
      onTty.add(100_000);
      offTty.add(100_000);
    }
    onTty.finish();
    tiny.add(PROGRESS_MIN_BYTES - 1);
    tiny.finish();

    // Assess
    expect(tty.split('\r\x1b[2K').filter(Boolean)).toHaveLength(20);
    expect(tty.endsWith('\r\x1b[2K')).toBe(true);
    expect(log.split('\n').filter(Boolean)).toStrictEqual([
      'uploading a.png 0% (0.1 MB of 2.0 MB)',
      'uploading a.png 25% (0.5 MB of 2.0 MB)',
      'uploading a.png 50% (1.0 MB of 2.0 MB)',
      'uploading a.png 75% (1.5 MB of 2.0 MB)',
      'uploading a.png 100% (2.0 MB of 2.0 MB)',
    ]);
    expect(small).toBe('');
  });

  it('maps media types to extensions and back, ignoring parameters and case', () => {
    expect(extensionFor('image/PNG')).toBe('.png');
    expect(extensionFor('image/jpeg; q=1')).toBe('.jpg');
    expect(extensionFor('application/x-made-up')).toBe('.bin');
    expect(mediaTypeForName('cat.JPEG')).toBe('image/jpeg');
    expect(mediaTypeForName('notes')).toBe('application/octet-stream');
  });
});

describe('run --input id=@file', () => {
  it('sends the file inline as a bare data URI', async () => {
    // Prepare
    const bytes = png(4, 4);
    writeFileSync(join(dir, 'p.png'), bytes);

    // Act
    const r = await cli(['run', 'photos', '-i', 'photo=@p.png', '--no-wait']);

    // Assess
    expect(r.code).toBe(0);
    const post = seen.find((s) => s.path === '/v1/pipelines/photos/runs');
    expect(JSON.parse(post?.body.toString() ?? '{}')).toStrictEqual({
      inputs: { photo: `data:image/png;base64,${bytes.toString('base64')}` },
    });
  });

  it("uploads a file over what a run takes inline through the pipeline's uploads route, PUT with its headers, then runs with the upload value", async () => {
    // Prepare
    const okBytes = bigPng(DEFINITION_ASSET_MAX_BYTES);
    const bigBytes = bigPng(DEFINITION_ASSET_MAX_BYTES + 1);
    writeFileSync(join(dir, 'ok.png'), okBytes);
    writeFileSync(join(dir, 'big.png'), bigBytes);

    // Act
    const ok = await cli(['run', 'photos', '-i', 'photo=@ok.png', '--no-wait']);
    const okRun = seen.find((s) => s.path === '/v1/pipelines/photos/runs');
    seen = [];
    const big = await cli(['run', 'photos', '-i', 'photo=@big.png', '--no-wait'], { tty: true });

    // Assess: at the limit inline, one byte over uploaded.
    expect(ok.code).toBe(0);
    expect(JSON.parse(okRun?.body.toString() ?? '{}')).toStrictEqual({
      inputs: { photo: `data:image/png;base64,${okBytes.toString('base64')}` },
    });
    expect(big.code).toBe(0);
    expect(seen.map((s) => `${s.method} ${s.path.split('?')[0]?.replace(/[0-9a-f-]{36}$/, '<id>')}`)).toEqual([
      'GET /v1/pipelines/photos',
      'POST /v1/pipelines/photos/uploads',
      'PUT /bucket/p/photos/u/<id>',
      'POST /v1/pipelines/photos/runs',
    ]);
    const create = seen[1];
    expect(create?.headers.authorization).toBe('Bearer pgo_test');
    expect(JSON.parse(create?.body.toString() ?? '{}')).toStrictEqual({ media_type: 'image/png', bytes: bigBytes.length });
    const put = seen[2];
    expect(put?.headers.authorization).toBeUndefined();
    expect(put?.body.equals(bigBytes)).toBe(true);
    const id = put?.path.split('?')[0]?.split('/').pop();
    expect(JSON.parse(seen[3]?.body.toString() ?? '{}')).toStrictEqual({ inputs: { photo: `upload:${id}` } });
    expect(big.stderr).toContain(`uploaded big.png (image/png, ${bigBytes.length} bytes) for photo`);
  });

  it("shows the service's refusal of the upload with what the file is", async () => {
    // Prepare
    writeFileSync(join(dir, 'big.png'), bigPng(DEFINITION_ASSET_MAX_BYTES + 1));
    state.uploadStatus = 400;
    state.uploadBody = {
      error: 'InvalidRequest',
      message: 'Invalid Request',
      detail: [{ path: 'media_type', reason: 'no asset input takes it' }],
    };

    // Act
    const r = await cli(['run', 'photos', '-i', 'photo=@big.png', '--no-wait']);

    // Assess
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('no asset input takes it');
    expect(r.stderr).toContain(`--input photo=@big.png: the file is image/png (by its bytes), ${DEFINITION_ASSET_MAX_BYTES + 1} bytes`);
    expect(seen.some((s) => s.path === '/v1/pipelines/photos/runs')).toBe(false);
  });
});

describe('result --download', () => {
  const link = (name: string) => `${origin}/v1/assets/${name}-token`;
  const assetOut = (name: string, mediaType: string, body: Buffer, extra: { status?: number; declared?: number } = {}) => {
    state.assets.set(`/v1/assets/${name}-token`, {
      status: extra.status ?? 200,
      body,
      ...(extra.declared !== undefined ? { declared: extra.declared } : {}),
    });
    return {
      value: link(name),
      value_type: 'ASSET',
      media_type: mediaType,
      bytes: extra.declared ?? body.length,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    };
  };

  it('saves every ASSET output as <output><ext> from its media type, and prints the paths', async () => {
    // Prepare
    const thumb = png(8, 8);
    const clip = Buffer.concat([mp4(), randomBytes(PROGRESS_MIN_BYTES)]);
    state.responseData = {
      thumb: assetOut('thumb', 'image/png', thumb),
      clip: assetOut('clip', 'video/mp4', clip),
      blob: assetOut('blob', 'application/x-unknown', Buffer.from('xyz')),
      note: { value: 'done', value_type: 'RAW' },
    };

    // Act
    const r = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);

    // Assess
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'out', 'thumb.png')).equals(thumb)).toBe(true);
    expect(readFileSync(join(dir, 'out', 'clip.mp4')).equals(clip)).toBe(true);
    expect(readFileSync(join(dir, 'out', 'blob.bin')).toString()).toBe('xyz');
    expect(readdirSync(join(dir, 'out')).sort()).toStrictEqual(['blob.bin', 'clip.mp4', 'thumb.png']);
    expect(r.stdout).toContain(`thumb  out/thumb.png  (image/png, ${thumb.length} bytes)`);
    expect(r.stderr).toContain('downloading clip 100%');
    // The capability link needs no key: none is sent to it.
    expect(seen.filter((s) => s.path.startsWith('/v1/assets/')).every((s) => s.headers['x-api-key'] === undefined)).toBe(true);
  });

  it("saves each file of a list output (a map's) as <output>-<n><ext>, skipping a failed item's null", async () => {
    // Prepare
    const [one, two] = [png(4, 4), png(6, 6)];
    const a = assetOut('v1', 'image/png', one);
    const b = assetOut('v3', 'image/png', two);
    state.responseData = {
      variants: {
        value: [a.value, null, b.value],
        value_type: 'ASSET',
        media_type: ['image/png', null, 'image/png'],
        bytes: [one.length, null, two.length],
        expires_at: a.expires_at,
      },
    };

    // Act
    const r = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);

    // Assess
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readdirSync(join(dir, 'out')).sort()).toStrictEqual(['variants-1.png', 'variants-3.png']);
    expect(readFileSync(join(dir, 'out', 'variants-1.png')).equals(one)).toBe(true);
    expect(readFileSync(join(dir, 'out', 'variants-3.png')).equals(two)).toBe(true);
  });

  it('refuses to overwrite without --force, fetching nothing; replaces with it', async () => {
    // Prepare
    mkdirSync(join(dir, 'out'));
    writeFileSync(join(dir, 'out', 'thumb.png'), 'old');
    state.responseData = { thumb: assetOut('thumb', 'image/png', png()) };

    // Act
    const refused = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);
    const fetchedBefore = seen.filter((s) => s.path.startsWith('/v1/assets/')).length;
    const forced = await cli(['result', EXEC, '--key', 'k', '--download', 'out', '--force']);

    // Assess
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('error: would overwrite out/thumb.png');
    expect(refused.stderr).toContain('hint: pass --force');
    expect(fetchedBefore).toBe(0);
    expect(forced.code).toBe(0);
    expect(readFileSync(join(dir, 'out', 'thumb.png')).equals(png())).toBe(true);
  });

  it('says to read the result again when a link answers 410', async () => {
    // Prepare
    state.responseData = { thumb: assetOut('thumb', 'image/png', Buffer.from('{"error":"Asset Link Expired"}'), { status: 410 }) };

    // Act
    const r = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `the link of output thumb has expired (HTTP 410); links are fresh on each read of the result: read it again with pipegate result ${EXEC} --download out`,
    );
    expect(existsSync(join(dir, 'out', 'thumb.png'))).toBe(false);
  });

  it('keeps nothing when the bytes received differ from the size the result says', async () => {
    // Prepare: the result announces one byte more than the link sends.
    state.responseData = { thumb: { ...assetOut('thumb', 'image/png', png()), bytes: png().length + 1 } };

    // Act
    const r = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`output thumb: received ${png().length} bytes, but the result says ${png().length + 1}; not saved`);
    expect(readdirSync(join(dir, 'out'))).toStrictEqual([]);
  });

  it('never takes a path from the server: an output id that is not a plain file name is refused', async () => {
    // Prepare
    state.responseData = { '../evil': assetOut('evil', 'image/png', png()) };

    // Act
    const r = await cli(['result', EXEC, '--key', 'k', '--download', 'out']);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('output "../evil" is not a plain file name; not saving it');
    expect(existsSync(join(dir, 'evil.png'))).toBe(false);
    expect(seen.some((s) => s.path.startsWith('/v1/assets/'))).toBe(false);
  });

  it('execute --wait --download saves the outputs of the finished execution', async () => {
    // Prepare
    state.responseData = { thumb: assetOut('thumb', 'image/png', png()) };

    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '--wait', '--download', 'got']);
    const noWait = await cli(['execute', DEP, '--key', 'k', '--download', 'got']);

    // Assess
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'got', 'thumb.png')).equals(png())).toBe(true);
    expect(noWait.code).toBe(2);
    expect(noWait.stderr).toContain('--download needs --wait');
  });
});
