/**
 * start:synth runs the service stack's upload-cors custom resource as CloudFormation would, its
 * S3 calls checked against its role: the emulated bucket then answers a browser's preflight
 * from this runtime's own origin (standing for the API's execute-api one) and refuses others; a
 * restart on another address updates the rule; a role without s3:PutBucketCORS fails the start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from '../../../lib/synth/assembly';
import { startSynthRuntime, type SynthRuntime } from '../../../lib/synth/runtime';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../../support/synth';
import { withTemplate } from '../../synth/synth-helpers';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const preflight = (rt: SynthRuntime, origin: string) =>
  fetch(`${rt.endpoint.url}/${rt.deps.config.bucket}/d/dep/u/upload-id`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type' },
  });

const originOf = (rt: SynthRuntime) => new URL(rt.url).origin;

describe('the upload-cors custom resource under start:synth', () => {
  const dirs: string[] = [];
  const running: SynthRuntime[] = [];
  const start = async (dataDir: string, edit?: (t: Template) => void) => {
    const assembly = edit ? withTemplate(await testAssembly(), 'Pipegate', edit) : await testAssembly();
    const rt = await startSynthRuntime({ port: 0, inMemory: true, log: false, dataDir, assembly });
    running.push(rt);
    return rt;
  };
  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'pipegate-synth-upload-cors-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const rt of running) await rt.stop({ drainMs: 0 });
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("lets the bucket answer the preflight from the runtime's own origin only, and tells the form page that origin", async () => {
    // Act
    const rt = await start(newDir());
    const allowed = await preflight(rt, originOf(rt));
    const other = await preflight(rt, 'http://127.0.0.1:1');
    // Assess
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(originOf(rt));
    expect(allowed.headers.get('access-control-allow-methods')).toBe('PUT');
    expect(other.status).toBe(403);
    expect(await other.text()).toContain('AccessForbidden');
    const page = [...rt.functions.values()].find((f) => /FormPage/.test(f.spec.name));
    expect(page?.spec.env.PIPEGATE_API_URL).toBe(rt.url);
    await rt.stop({ drainMs: 0 });
  });

  it('updates the rule when a restart listens elsewhere: the new origin is allowed, the old one refused', async () => {
    // Prepare
    const dir = newDir();
    const first = await start(dir);
    const before = originOf(first);
    await first.stop({ drainMs: 0 });
    // Act
    const second = await start(dir);
    // Assess
    expect(originOf(second)).not.toBe(before);
    expect((await preflight(second, originOf(second))).status).toBe(200);
    expect((await preflight(second, before)).status).toBe(403);
    await second.stop({ drainMs: 0 });
  });

  it("fails the start, as the deploy would fail, when the resource's role may not put the bucket's CORS configuration", async () => {
    // Act
    const started = start(newDir(), (t) => {
      for (const r of Object.values(t.Resources)) {
        if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(r.Properties?.Roles).includes('"UploadCors')) continue;
        const doc = r.Properties?.PolicyDocument as { Statement: { Action: string | string[] }[] };
        for (const s of doc.Statement) s.Action = [s.Action].flat().filter((a) => a !== 's3:PutBucketCORS');
      }
    });
    // Assess
    await expect(started).rejects.toThrow(/UploadCorsResource: custom resource Create failed: .*s3:PutBucketCORS/);
  });
});
