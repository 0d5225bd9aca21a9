/**
 * Files through the CLI end to end: the local runtime (its S3 emulation included) and the CLI
 * spawned as a real process. `execute --input photo=@file` inline and through an upload, `run`
 * inline and through the pipeline's upload, `apply` of a pipeline file whose asset input names a file, and the service's refusal
 * of a file of the wrong type shown to the user.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import type { PipelineDefinition } from '../../functions/core/types';
import { runCli, type CliRun } from '../support/cli';
import { jpeg, mp4, png } from '../support/media';
import { startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

const photoInfo: PipelineDefinition = {
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(1, 1).toString('base64')}`,
      media_types: ['image/png', 'image/jpeg'],
      max_bytes: 8_000_000,
    },
    about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes) & ' ' & photo.sha256" },
    info: { type: 'output', from: 'about' },
  },
};

let rt: TestRuntime;
let p: Published;
let dir: string;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: dir, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });
const json = <T = Record<string, unknown>>(d: CliRun): T => {
  try {
    return JSON.parse(d.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${d.code}):\n${d.stdout}\nstderr:\n${d.stderr}`);
  }
};
type ResultDoc = { status: string; response_data: Record<string, { value: string }> };

beforeAll(async () => {
  rt = await startTestRuntime();
  p = await rt.publishPipeline('photo-info', photoInfo);
  dir = mkdtempSync(join(tmpdir(), 'pipegate-cli-files-e2e-'));
});
afterAll(async () => {
  await rt?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('execute --input photo=@file', () => {
  it('sends a small file inline; the pipeline sees its sniffed type, size and hash', async () => {
    // Prepare
    const bytes = jpeg();
    writeFileSync(join(dir, 'small.jpg'), bytes);

    // Act
    const done = await pg(['execute', p.deploymentId, '--key', p.apiKey, '-i', 'photo=@small.jpg', '--wait', '--json']);

    // Assess
    expect(done.code).toBe(0);
    expect(json<ResultDoc>(done).response_data.info?.value).toBe(`image/jpeg ${bytes.length} ${sha(bytes)}`);
    expect(done.stderr).not.toContain('uploaded');
  });

  it('uploads a file too large to send inline, with progress, and the execution sees the exact bytes', async () => {
    // Prepare
    const bytes = Buffer.concat([png(64, 64), Buffer.alloc(INLINE_ASSET_BODY_MAX_BYTES)]);
    writeFileSync(join(dir, 'large.png'), bytes);

    // Act
    const done = await pg(['execute', p.deploymentId, '--key', p.apiKey, '-i', 'photo=@large.png', '--wait', '--json']);

    // Assess
    expect(done.code).toBe(0);
    expect(json<ResultDoc>(done).response_data.info?.value).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
    expect(done.stderr).toContain('uploading large.png 100%');
    expect(done.stderr).toContain(`uploaded large.png (image/png, ${bytes.length} bytes) for photo`);
  });

  it("shows the service's refusal of a file of a type the input does not take", async () => {
    // Prepare
    writeFileSync(join(dir, 'clip.mp4'), mp4());

    // Act
    const done = await pg(['execute', p.deploymentId, '--key', p.apiKey, '-i', 'photo=@clip.mp4']);

    // Assess
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/error: .*\n.*photo.*video\/mp4.*image\/png or image\/jpeg/);
  });
});

describe('owner files', () => {
  it('run --input photo=@file sends the file inline', async () => {
    // Prepare
    const bytes = png(5, 5);
    writeFileSync(join(dir, 'five.png'), bytes);

    // Act
    const done = await pg(['run', 'photo-info', '-i', 'photo=@five.png', '--json']);

    // Assess
    expect(done.code).toBe(0);
    expect(json<{ outputs: Record<string, string> }>(done).outputs.info).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
  });

  it("run --input photo=@file uploads a 300 KB photo through the pipeline's uploads route; the run's asset output serves its exact bytes", async () => {
    // Prepare: a pipeline that hands the photo back, and a real PNG far over a run's inline 64 KiB.
    const echo: PipelineDefinition = { nodes: { ...photoInfo.nodes, copy: { type: 'output', from: 'photo' } } };
    const pushed = await fetch(`${rt.url}/v1/pipelines/photo-echo`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${rt.ownerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(echo),
    });
    expect(pushed.status).toBe(201);
    // Random pixels barely compress: 320×320 is about 350 KB.
    const noise = randomBytes(320 * 320 * 3);
    const bytes = png(320, 320, (x, y) => [
      noise[(y * 320 + x) * 3] ?? 0,
      noise[(y * 320 + x) * 3 + 1] ?? 0,
      noise[(y * 320 + x) * 3 + 2] ?? 0,
      255,
    ]);
    expect(bytes.length).toBeGreaterThan(300_000);
    writeFileSync(join(dir, 'x.png'), bytes);

    // Act
    const done = await pg(['run', 'photo-echo', '--input', 'photo=@x.png', '--json']);
    const doc = json<{ status: string; outputs: Record<string, unknown>; output_assets: Record<string, unknown> }>(done);
    const copy = doc.output_assets.copy as { value: string; value_type: string; media_type: string; bytes: number };
    const served = await fetch(copy.value);
    const body = Buffer.from(await served.arrayBuffer());

    // Assess
    expect(done.code).toBe(0);
    expect(done.stderr).toContain(`uploaded x.png (image/png, ${bytes.length} bytes) for photo`);
    expect(doc.status).toBe('completed');
    expect(doc.outputs.info).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
    expect(copy).toMatchObject({ value_type: 'ASSET', media_type: 'image/png', bytes: bytes.length });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(sha(body)).toBe(sha(bytes));
  });

  it("apply takes an asset input's @path value as its current value, which a run without inputs uses", async () => {
    // Prepare
    const bytes = png(7, 3);
    mkdirSync(join(dir, 'pipelines', 'assets'), { recursive: true });
    writeFileSync(join(dir, 'pipelines', 'assets', 'default.png'), bytes);
    const def = { nodes: { ...photoInfo.nodes, photo: { ...photoInfo.nodes.photo, value: '@assets/default.png' } } };
    writeFileSync(join(dir, 'pipelines', 'photo-default.json'), JSON.stringify(def));

    // Act
    const applied = await pg(['apply', 'pipelines/photo-default.json', '--json']);
    const report = json<{ ok: boolean; pipelines: { deployment_id: string; files: unknown }[] }>(applied);
    const run = await pg(['run', 'photo-default', '--json']);

    // Assess
    expect(applied.code).toBe(0);
    expect(report.pipelines[0]?.files).toStrictEqual([{ input: 'photo', path: 'assets/default.png', bytes: bytes.length }]);
    expect(json<{ outputs: Record<string, string> }>(run).outputs.info).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
  });
});
