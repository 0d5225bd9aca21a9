/**
 * Objects go with what they belong to on the local runtime: a deleted deployment's at once
 * (over HTTP, through the S3 emulation), another deployment's and pipelines' untouched.
 */
import { greeting, startTestRuntime, type TestRuntime } from '../support/runtime';

describe("a deployment's objects on the local runtime", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime();
  });
  afterAll(async () => {
    await rt?.stop({ drainMs: 0 });
  });

  it('are removed when the deployment is deleted; others stay', async () => {
    // Prepare
    const doomed = await rt.publishPipeline('doomed-objects', greeting);
    const kept = await rt.publishPipeline('kept-objects', greeting);
    const E = '5a1c2a9e-2b43-4c7c-8a57-2f6f4f0f4f20';
    const keys = [`d/${doomed.deploymentId}/e/${E}/out.a`, `d/${doomed.deploymentId}/u/${E}`];
    for (const k of keys) await rt.deps.objects.put(k, Uint8Array.from([1, 2]), 'image/png');
    await rt.deps.objects.put(`d/${kept.deploymentId}/e/${E}/out.a`, Uint8Array.from([3]), 'image/png');
    await rt.deps.objects.put(`p/doomed-objects/r/${E}/out.a`, Uint8Array.from([4]), 'image/png');
    // Act
    const del = await rt.owner('DELETE', `/v1/pipelines/doomed-objects/deployment?confirm=${doomed.deploymentId}`);
    // Assess
    expect(del.status).toBe(204);
    for (const k of keys) expect(await rt.deps.objects.head(k)).toBeNull();
    expect(await rt.deps.objects.head(`d/${kept.deploymentId}/e/${E}/out.a`)).not.toBeNull();
    // A run's objects belong to the pipeline, which outlives its deployment.
    expect(await rt.deps.objects.head(`p/doomed-objects/r/${E}/out.a`)).not.toBeNull();
  });
});
