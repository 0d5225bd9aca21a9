/**
 * The templates' schedules under `npm run start:synth`: the sweeper's EventBridge rule invokes
 * the sweeper bundle, whose pass repairs a stuck execution through its own role's grants (the
 * sweep index Query, the item read and conditional update, the queue send), and a rule whose
 * Lambda permission is missing does not invoke its target, as on AWS.
 */
import { randomUUID } from 'node:crypto';
import type { SweepReport } from '../../../functions/services/sweeper.service';
import type { SynthRuntime } from '../../../lib/synth/runtime';
import { greeting, request, waitUntil } from '../../support/runtime';
import { ownSynthRuntimes } from '../../support/synth';

const start = ownSynthRuntimes('schedules');

const sweeperOf = (rt: SynthRuntime) => {
  const found = rt.schedules.filter((s) => /sweeper/i.test(s.functionName));
  expect(found).toHaveLength(1);
  return found[0] as SynthRuntime['schedules'][number];
};

describe('the sweeper schedule', () => {
  let rt: SynthRuntime;
  beforeAll(async () => {
    rt = await start();
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('runs every minute and its pass carries a stuck pending execution to the end', async () => {
    // Prepare: a published version, and an execution of it left pending ten minutes ago (its message lost).
    const owner = (method: string, path: string, body?: unknown) =>
      request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}` });
    const pushed = await owner('PUT', '/v1/pipelines/greeting', greeting);
    const id = randomUUID();
    const created = new Date(Date.now() - 10 * 60_000).toISOString();
    await rt.deps.executions.create({
      execution_id: id,
      kind: 'run',
      pipeline_id: 'greeting',
      version: Number(pushed.body.version),
      deployment_id: null,
      status: 'pending',
      inputs: { name: 'Ada' },
      outputs: null,
      visible_outputs: null,
      callback: null,
      callback_delivery: null,
      error_message: null,
      created_at: created,
      started_at: null,
      completed_at: null,
      expires_at: null,
    });
    const sweeper = sweeperOf(rt);

    // Act
    const report = (await sweeper.fire()) as SweepReport;

    // Assess
    expect(sweeper.everyMs).toBe(60_000);
    expect(report).toMatchObject({ requeued: 1, errors: 0 });
    const done = await waitUntil(
      () => rt.deps.executions.get(id, new Date(), true),
      (e) => e?.status === 'completed',
    );
    expect(done?.outputs).toEqual({ message: 'Hello, Ada!' });
    expect(rt.endpoint.denials).toEqual([]);
  });
});

it('does not invoke a scheduled target without a Lambda permission for its rule', async () => {
  // Prepare
  const rt = await start((t) => {
    const permission = Object.entries(t.Resources).find(
      ([, r]) => r.Type === 'AWS::Lambda::Permission' && r.Properties?.Principal === 'events.amazonaws.com',
    );
    if (!permission) throw new Error('no permission for EventBridge in the template');
    delete t.Resources[permission[0]];
  });
  try {
    // Act
    const fired = sweeperOf(rt).fire();

    // Assess
    await expect(fired).rejects.toThrow(/events\.amazonaws\.com may not invoke/);
  } finally {
    await rt.stop();
  }
});
