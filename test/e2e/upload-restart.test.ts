/**
 * A presigned upload URL handed out before a restart of `npm start` still works after it: the
 * S3 emulation listens again on the port recorded in the data dir (lib/local/bootstrap.ts
 * onRecordedPort), so the URL's host and its SigV4 signature stay valid; a port taken
 * meanwhile gives way to a free one, recorded for the next start.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { photoBytesPipeline, png } from '../support/media';
import { putUpload, startTestRuntime, type TestRuntime } from '../support/runtime';

let dataDir: string;
let rt: TestRuntime | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-upload-restart-'));
});
afterAll(async () => {
  await rt?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const start = () => startTestRuntime({ dataDir, inMemory: false });
const s3Port = () => readFileSync(join(dataDir, 's3-port'), 'utf8').trim();

it('accepts the PUT of an upload created before the restart, and runs an execution with it', async () => {
  // Prepare: an upload created, the runtime restarted on the same data dir.
  rt = await start();
  const p = await rt.publishPipeline('restart-photo', photoBytesPipeline());
  const bytes = png(12, 12);
  const up = await rt.caller<{ upload_url: string; headers: Record<string, string>; asset: { value: string; value_type: string } }>(
    'POST',
    `/v1/deployments/${p.deploymentId}/uploads/`,
    p.apiKey,
    { media_type: 'image/png', bytes: bytes.length },
  );
  expect(up.status).toBe(201);
  const before = s3Port();
  expect(up.body.upload_url.startsWith(`http://127.0.0.1:${before}/`)).toBe(true);
  await rt.stop();
  rt = await start();

  // Act
  const put = await putUpload(up.body, bytes);
  const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {
    workflow_input: { photo: up.body.asset },
  });
  const id = r.body.execution_id as string;
  await rt.waitForExecution(id, p.apiKey);
  const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey);

  // Assess
  expect(s3Port()).toBe(before);
  expect(put.status).toBe(200);
  expect(r.status).toBe(202);
  expect(result.body.status).toBe('completed');
  expect((result.body.response_data as Record<string, { value: unknown }>).bytes?.value).toBe(bytes.length);
});

it('listens on a free port, and records it, when the recorded one is taken', async () => {
  // Prepare: another process holds the recorded port.
  await rt?.stop();
  rt = undefined;
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, '127.0.0.1', () => ok()));
  const taken = (holder.address() as { port: number }).port;
  writeFileSync(join(dataDir, 's3-port'), `${taken}\n`);

  try {
    // Act
    rt = await start();

    // Assess
    expect(s3Port()).not.toBe(String(taken));
    expect(rt.s3Url).toBe(`http://127.0.0.1:${s3Port()}`);
  } finally {
    await new Promise((ok) => holder.close(ok));
  }
});
