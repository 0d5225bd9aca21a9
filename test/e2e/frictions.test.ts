/**
 * Errors that tell the user what to do, through the local runtime over HTTP: 401 and 413
 * bodies, Idempotency-Key reuse, a run's inputs given in the caller's shape, and the URL the
 * runtime records for the CLI.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KEY_REFUSALS, UNAUTHORIZED_DETAIL } from '../../functions/core/errors';
import { greeting, startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let p: Published;

beforeAll(async () => {
  rt = await startTestRuntime();
  p = await rt.publishPipeline('frictions', greeting);
});
afterAll(async () => {
  await rt?.cleanup();
});

describe('the local runtime', () => {
  it('records its URL beside the owner token', () => {
    expect(readFileSync(join(rt.dataDir, 'runtime-url'), 'utf8').trim()).toBe(rt.url);
  });

  it('says in a 401 which credential forms it expects, for callers and for owners', async () => {
    // Act
    const caller = await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, 'pgk_not-a-real-key');
    const owner = await rt.caller('GET', '/v1/pipelines', null, undefined, { authorization: 'Bearer wrong' });

    // Assess
    const none = await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, null);
    expect([caller.status, caller.body]).toEqual([401, { error: 'Unauthorized', reason: 'malformed', detail: KEY_REFUSALS.malformed }]);
    // With no key at all, the detail names the forms a key is sent in.
    expect([none.status, none.body.reason, String(none.body.detail)]).toEqual([
      401,
      'missing',
      expect.stringContaining(UNAUTHORIZED_DETAIL.apiKey),
    ]);
    expect([owner.status, owner.body]).toEqual([401, { error: 'Unauthorized', detail: UNAUTHORIZED_DETAIL.ownerToken }]);
  });

  it('states the limit in a 413', async () => {
    // Act
    const r = await rt.caller(
      'POST',
      `/v1/deployments/${p.deploymentId}/executions/`,
      p.apiKey,
      'x'.repeat(rt.deps.config.maxBodyBytes + 1),
      {
        'content-type': 'application/json',
      },
    );

    // Assess
    expect(r.status).toBe(413);
    expect(r.body.detail).toBe(`the request body must be at most ${rt.deps.config.maxBodyBytes} bytes (256 KiB)`);
  });

  it('says what differed when an Idempotency-Key is reused: the body hashes, not the bodies', async () => {
    // Prepare
    const path = `/v1/deployments/${p.deploymentId}/executions/`;
    const first = await rt.caller(
      'POST',
      path,
      p.apiKey,
      { workflow_input: { name: { value: 'Ada-private', value_type: 'RAW' } } },
      { 'idempotency-key': 'k-1' },
    );

    // Act
    const second = await rt.caller(
      'POST',
      path,
      p.apiKey,
      { workflow_input: { name: { value: 'Grace-private', value_type: 'RAW' } } },
      { 'idempotency-key': 'k-1' },
    );

    // Assess
    expect([first.status, first.text]).toEqual([202, expect.any(String)]);
    expect(second.status).toBe(422);
    expect(second.body.error).toBe('Idempotency Key Reused');
    expect(second.body.detail).toMatch(
      /different request body \(SHA-256 of the canonical body: first [0-9a-f]{12}…, this one [0-9a-f]{12}…\)/,
    );
    expect(second.text).not.toMatch(/Ada-private|Grace-private/);
  });

  it("tells an owner who passes a caller's value object to a run which shape a run takes, and lists the inputs for an unknown one", async () => {
    // Act
    const shaped = await rt.owner('POST', '/v1/pipelines/frictions/runs', { inputs: { name: { value: 'Ada', value_type: 'RAW' } } });
    const unknown = await rt.owner('POST', '/v1/pipelines/frictions/runs', { inputs: { nmae: 'Ada' } });

    // Assess
    expect(shaped.status).toBe(400);
    expect(shaped.body.detail).toEqual([
      {
        path: 'inputs.name',
        reason:
          'a run takes the bare value ({"inputs": {"name": <value>}}), not a caller\'s value object ({"value": …, "value_type": "RAW"})',
      },
    ]);
    expect(unknown.body.detail).toEqual([{ path: 'inputs.nmae', reason: 'no input node with this id; the inputs are: name' }]);
  });

  it('removes the recorded URL when it stops', async () => {
    // Act
    await rt.stop();

    // Assess
    expect(existsSync(join(rt.dataDir, 'runtime-url'))).toBe(false);
  });
});
