/**
 * A 100 MiB upload is checked inside a Lambda function's 256 MB: the execute function's check
 * (functions/services/asset-inputs.service.ts, with the S3 adapter the functions use) runs in a
 * process of its own (test/support/upload-check-child.ts) against the local S3 emulation, and
 * that whole process, Node and the modules the check loads included, peaks under 256 MiB, its
 * growth under the 160 MB the check is allowed. Reading the object whole held about three copies
 * of it (+300 MB) and crashed a 256 MB function above ≈ 55–60 MiB. The kernel's high-water mark
 * of the child's own memory (VmHWM) is read, so no peak is missed and none of this process's
 * counts (getrusage's maxRSS would start at this jest worker's peak); memory, not speed, is
 * asserted. The figure is more than the function's: tsx compiles the sources in the process and
 * the test's in-memory stores load with it, where the function loads one bundle.
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { UPLOAD_MAX_BYTES } from '../../functions/core/assets';
import { ownerUploadKey } from '../../functions/core/object-keys';
import { startLocalS3, type LocalS3 } from '../../lib/local/s3';
import { png } from '../support/media';

const BUCKET = 'pipegate-objects';
const creds = { accessKeyId: 'AKLOCALTEST', secretAccessKey: 'local-test-secret' };
/** A Lambda function's memory (lib/stacks/pipegate-function.ts), in bytes. */
const FUNCTION_MEMORY_BYTES = 256 * 1024 * 1024;
/** What the check may add to its process while it reads the largest upload (issue's goal). */
const CHECK_GROWTH_BYTES = 160 * 1000 * 1000;

interface ChildAnswer {
  bytes: number;
  media_type: string;
  sha256: string;
  before: number;
  peak: number;
}

function runChild(env: Record<string, string>): Promise<ChildAnswer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'support', 'upload-check-child.ts')], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out) as ChildAnswer) : reject(new Error(`the check's process ended ${code}: ${err}`)),
    );
  });
}

describe("the check of a 100 MiB upload, in a Lambda function's memory", () => {
  let dir: string;
  let s3: LocalS3;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-upload-memory-'));
    s3 = await startLocalS3({
      dir,
      buckets: [BUCKET],
      region: 'local',
      secretOf: (id) => (id === creds.accessKeyId ? creds.secretAccessKey : undefined),
    });
  });
  afterAll(async () => {
    await s3.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts, hashes and sniffs it in a process that peaks under 256 MiB', async () => {
    // Prepare: the largest upload, a PNG's bytes at its head, stored where the uploads route puts it.
    const deploymentId = randomUUID();
    const uploadId = randomUUID();
    const file = Buffer.alloc(UPLOAD_MAX_BYTES, 7);
    png(4, 4).copy(file);
    const store = createObjectStore({ region: 'local', s3Endpoint: s3.url, s3ForcePathStyle: true }, BUCKET, creds);
    await store.put(ownerUploadKey({ kind: 'deployment', deployment_id: deploymentId }, uploadId), file, 'image/png');
    const sha256 = createHash('sha256').update(file).digest('hex');
    // Act
    const answer = await runChild({
      S3_URL: s3.url,
      S3_BUCKET: BUCKET,
      S3_KEY_ID: creds.accessKeyId,
      S3_SECRET: creds.secretAccessKey,
      DEPLOYMENT_ID: deploymentId,
      UPLOAD_ID: uploadId,
      UPLOAD_BYTES: String(UPLOAD_MAX_BYTES),
    });
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    console.log(
      `100 MiB upload checked: process peak ${mb(answer.peak)}, ${mb(answer.peak - answer.before)} over its ${mb(answer.before)} before`,
    );
    // Assess
    expect({ bytes: answer.bytes, media_type: answer.media_type, sha256: answer.sha256 }).toEqual({
      bytes: UPLOAD_MAX_BYTES,
      media_type: 'image/png',
      sha256,
    });
    expect({ peak: answer.peak, under: answer.peak < FUNCTION_MEMORY_BYTES }).toEqual({ peak: answer.peak, under: true });
    expect({ growth: answer.peak - answer.before, under: answer.peak - answer.before < CHECK_GROWTH_BYTES }).toEqual({
      growth: answer.peak - answer.before,
      under: true,
    });
  });
});
