/**
 * The API's resource policy, under `npm run start:synth`: the owner token stands for one IAM
 * principal (PIPEGATE_OWNER_PRINCIPAL), and the template's policy decides whether it may call
 * the owner routes, as API Gateway would. A principal of the deploying account may; one of
 * another account gets the ACCESS_DENIED answer before any function runs, while callers and
 * the public routes are let through either way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSynthRuntime, type SynthRuntime } from '../../../lib/synth/runtime';
import { request } from '../../support/runtime';
import { testAssembly } from '../../support/synth';

const dirs: string[] = [];
async function runtime(ownerPrincipal: string): Promise<SynthRuntime> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-synth-owner-policy-'));
  dirs.push(dataDir);
  return startSynthRuntime({ port: 0, inMemory: true, log: false, dataDir, assembly: await testAssembly(), ownerPrincipal });
}

describe('the owner routes behind the resource policy', () => {
  let ours: SynthRuntime;
  let theirs: SynthRuntime;
  beforeAll(async () => {
    ours = await runtime('arn:aws:iam::123456789012:role/deployer');
    theirs = await runtime('arn:aws:iam::999999999999:role/intruder');
  });
  afterAll(async () => {
    await Promise.all([ours?.stop(), theirs?.stop()]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const owner = (rt: SynthRuntime) => ({ authorization: `Bearer ${rt.ownerToken}` });
  const invocations = (rt: SynthRuntime, name: string) => rt.functions.get(name)?.stats.invocations ?? 0;

  it("lets a principal of the template's account list pipelines", async () => {
    // Act
    const r = await request<{ pipelines: unknown[] }>(`${ours.url}/v1/pipelines`, 'GET', undefined, owner(ours));
    // Assess
    expect(r.status).toBe(200);
  });

  it('answers a principal of another account with ACCESS_DENIED, and no function runs', async () => {
    // Prepare
    const before = invocations(theirs, 'pipeline-list');
    // Act
    const r = await request<{ error: string }>(`${theirs.url}/v1/pipelines`, 'GET', undefined, owner(theirs));
    // Assess
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'Unauthorized', reason: '', detail: '' });
    expect(invocations(theirs, 'pipeline-list')).toBe(before);
  });

  it('lets callers and the public routes through whoever the owner is', async () => {
    // Act
    const docs = await request(`${theirs.url}/v1/docs/swagger-ui.css`, 'GET', undefined, {});
    const call = await request<{ error: string }>(`${theirs.url}/v1/deployments/00000000-0000-4000-8000-000000000000`, 'GET', undefined, {
      'x-api-key': 'pgk_not-a-key',
    });
    // Assess: the docs file is served; the caller reaches the authorizer, which refuses the key.
    expect(docs.status).toBe(200);
    expect(call.status).toBe(401);
    expect(call.body.error).toBe('Unauthorized');
  });
});
