/**
 * Owner secrets under start:synth: sealed by secret-put with a data key from the template's KMS
 * key and opened by task-run, each call checked against the function's role and the key
 * policy; with task-run's grant taken out of the template, the run fails on the refused
 * Decrypt and the value never reaches the upstream.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { reply, startTestServer, type TestServer } from '../../support/http-server';
import { testAssembly } from '../../support/synth';
import { startE2eRuntime, useE2eMode, type E2eRuntime } from '../../support/runtime';
import { withTemplate } from '../../synth/synth-helpers';
import { isPlainObject } from '../../../functions/core/values';

useE2eMode('synth');

const VALUE = `planted-${Date.now()}`;
let upstream: TestServer;
const seen: string[] = [];

const uses = (origin: string) => ({
  nodes: {
    call: { type: 'http', url: `${origin}/quote`, headers: { authorization: 'Bearer {{secrets.RATES_TOKEN}}' } },
    ok: { type: 'transform', inputs: ['call'], expression: 'call.ok' },
    out: { type: 'output', from: 'ok' },
  },
});

beforeAll(async () => {
  upstream = await startTestServer((req, res) => {
    seen.push(String(req.headers.authorization ?? ''));
    reply(res, 200, { ok: true });
  });
});
afterAll(async () => {
  await upstream?.close();
});

/** Every file under a directory. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('with the template as synthesized', () => {
  let rt: E2eRuntime;
  const lines: string[] = [];
  beforeAll(async () => {
    rt = await startE2eRuntime({ log: (line) => lines.push(line) });
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it('seals a secret under the KMS key and opens it for a run, the upstream receiving the value', async () => {
    // Act
    const set = await rt.owner('PUT', '/v1/secrets/RATES_TOKEN', { value: VALUE });
    const pushed = await rt.owner('PUT', '/v1/pipelines/uses-secret', uses(upstream.origin));
    const run = await rt.runToEnd('uses-secret');

    // Assess
    expect(set.status).toBe(200);
    expect(pushed.status).toBe(201);
    expect([run.status, run.error_message ?? null]).toEqual(['completed', null]);
    expect(seen.at(-1)).toBe(`Bearer ${VALUE}`);
    expect(JSON.stringify(run)).not.toContain(VALUE);
  });

  it('keeps the value out of every file of the data dir (the KMS key material included) and out of the log', () => {
    // Act
    const files = filesUnder(rt.dataDir).map((f) => [f, readFileSync(f)] as const);

    // Assess: the search can find (the key material file is there), and finds no value.
    expect(files.map(([f]) => f).some((f) => f.endsWith('kms.json'))).toBe(true);
    expect(files.filter(([, bytes]) => bytes.includes(VALUE)).map(([f]) => f)).toEqual([]);
    expect(lines.join('\n')).not.toContain(VALUE);
  });
});

describe("with task-run's KMS grant taken out of the template", () => {
  let rt: E2eRuntime;
  const lines: string[] = [];
  beforeAll(async () => {
    const assembly = withTemplate(await testAssembly(), 'Pipegate', (t) => {
      for (const r of Object.values(t.Resources)) {
        if (r.Type !== 'AWS::IAM::Policy' || !isPlainObject(r.Properties?.PolicyDocument)) continue;
        const doc = r.Properties.PolicyDocument as { Statement: { Action: unknown }[] };
        doc.Statement = doc.Statement.filter((st) => ![st.Action].flat().includes('kms:Decrypt'));
      }
    });
    rt = await startE2eRuntime({ assembly, log: (line) => lines.push(line) });
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it('fails the run on the refused Decrypt, sending nothing upstream', async () => {
    // Prepare
    const before = seen.length;

    // Act
    await rt.owner('PUT', '/v1/secrets/RATES_TOKEN', { value: VALUE });
    await rt.owner('PUT', '/v1/pipelines/uses-secret', uses(upstream.origin));
    const run = await rt.runToEnd('uses-secret');

    // Assess
    expect(run.status).toBe('failed');
    expect(run.error_message).toContain('AccessDeniedException');
    expect(seen.length).toBe(before);
    expect(lines.some((l) => /aws-endpoint: AccessDenied kms:Decrypt on arn:aws:kms:[^ ]+ for [^ ]*TaskRun/.test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain(VALUE);
  });
});
