/**
 * Callback dispatch with duplicate queue messages, on in-memory stores: a conditional claim per
 * attempt lets one message send it; a message that comes back after its holder died, or any
 * message once the claim has run out, may send it again (same webhook-id). The sweeper's
 * re-queue and the owner's redelivery go through the same claim.
 */
import type { HttpPort } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';
import { callbackClaimMs } from '../../../lib/config';
import { execute } from '../../../functions/services/caller.service';
import { dispatchCallback } from '../../../functions/services/dispatch.service';
import { redeliver } from '../../../functions/services/owner-executions.service';
import { sweepOnce } from '../../../functions/services/sweeper.service';
import { taskRun, taskStart } from '../../../functions/services/tasks.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores, type MemoryExecutions } from '../../support/memory-stores';

const BASE = 'https://api.example';
const HOOK = 'https://hooks.example/done';
const echo: PipelineDefinition = {
  nodes: { name: { type: 'input', value_type: 'string', value: 'w' }, out: { type: 'output', from: 'name' } },
};

interface Setup {
  d: TestDeps;
  id: string;
  /** The webhook-id of every POST the receiver got. */
  posts: string[];
  /** The body of every POST the receiver got. */
  bodies: string[];
  /** What the receiver answers to the next POST. */
  answer: { next: () => Promise<number> };
  clock: { ms: number };
}

/** A finished execution of a live deployment whose callback is owed, attempt 0 not yet sent. */
async function owed(): Promise<Setup> {
  const posts: string[] = [];
  const bodies: string[] = [];
  const answer = { next: async () => 204 };
  const clock = { ms: Date.parse('2026-11-22T12:00:00.000Z') };
  const http: HttpPort = async (req) => {
    if (!req.url.startsWith(HOOK)) throw new Error('no network here');
    posts.push(req.headers['webhook-id'] ?? '');
    bodies.push(String(req.body));
    return { status: await answer.next(), headers: {}, body: '' };
  };
  const stores = memoryStores();
  const base = testDeps(stores);
  const d = testDeps(stores, {
    http,
    clock: { now: () => new Date(clock.ms) },
    config: { ...base.config, callbackScheduleSeconds: [1, 1] },
  });
  const { auth } = await publishPipeline(d, 'echo', { definition: echo, publishBody: '{}', base: BASE });
  const accepted = await execute(d, auth, {
    deploymentId: auth.deploymentId,
    body: JSON.stringify({ callback: HOOK }),
    contentType: 'application/json',
    idempotencyKey: undefined,
    baseUrl: BASE,
  });
  const id = (accepted.body as { execution_id: string }).execution_id;
  await taskStart(d, id);
  await taskRun(d, id);
  return { d, id, posts, bodies, answer, clock };
}

const settle = () => new Promise((r) => setImmediate(r));

/** Holds every POST open until `open`, so duplicates arrive mid-send; answers 204 after it. */
function holdPosts(s: Setup): { open: () => void } {
  const held: ((status: number) => void)[] = [];
  let opened = false;
  s.answer.next = () => (opened ? Promise.resolve(204) : new Promise<number>((r) => held.push(r)));
  return {
    open: () => {
      opened = true;
      for (const release of held.splice(0)) release(204);
    },
  };
}
const dispatch = (s: Setup, messageId: string) => dispatchCallback(s.d, { execution_id: s.id }, () => 0, messageId);

describe('duplicate callback messages', () => {
  it('send an attempt once: the message that claims it sends, the others are dropped', async () => {
    // Prepare: every POST is held open until released, so the duplicates arrive mid-send.
    const s = await owed();
    const posts = holdPosts(s);
    // Act
    const first = dispatch(s, 'm1');
    while (s.posts.length === 0) await settle();
    const duplicates = dispatch(s, 'm2').then(async (a) => [a, await dispatch(s, 'm3')]);
    for (let i = 0; i < 20; i += 1) await settle();
    posts.open();
    const outcome = await first;
    const dropped = await duplicates;
    const late = await dispatch(s, 'm4');
    // Assess
    expect(outcome).toBe('delivered');
    expect(dropped).toEqual(['claimed_elsewhere', 'claimed_elsewhere']);
    expect(late).toBe('skipped');
    expect(s.posts).toHaveLength(1);
  });

  it("let the holder's own message take its claim again, and any message once the claim has run out", async () => {
    // Prepare: m1 claimed attempt 0 and died before recording it.
    const s = await owed();
    const { d, id, clock } = s;
    expect(await d.deliveries.claimDelivery(id, 0, 'm1', clock.ms + callbackClaimMs(d.config), clock.ms)).toBe(true);
    s.answer.next = async () => 500;
    // Act: another message while the claim lives; then m1 back (its message returned to the queue).
    const other = await dispatch(s, 'm2');
    const back = await dispatch(s, 'm1');
    // Attempt 1: claimed by m3, which dies too; m4 while the claim lives, and after it has run out.
    clock.ms += 1_000;
    expect(await d.deliveries.claimDelivery(id, 1, 'm3', clock.ms + 5_000, clock.ms)).toBe(true);
    const whileHeld = await dispatch(s, 'm4');
    clock.ms += 5_001;
    s.answer.next = async () => 204;
    const afterwards = await dispatch(s, 'm4');
    // Assess
    expect([other, back, whileHeld, afterwards]).toEqual(['claimed_elsewhere', 'retry', 'claimed_elsewhere', 'delivered']);
    expect(s.posts).toHaveLength(2);
    expect(new Set(s.posts).size).toBe(1);
  });

  it('claim nothing once the attempt is recorded or the delivery settled', async () => {
    // Prepare
    const { d, id, clock } = await owed();
    expect(await dispatchCallback(d, { execution_id: id }, () => 0, 'm1')).toBe('delivered');
    // Act / Assess
    expect(await d.deliveries.claimDelivery(id, 0, 'm1', clock.ms + 1_000, clock.ms)).toBe(false);
    expect(await d.deliveries.claimDelivery(id, 1, 'm2', clock.ms + 1_000, clock.ms)).toBe(false);
  });
});

describe("a dead holder's claim and the sweeper", () => {
  it("re-queues the owed callback after its quiet period, when the dead-lettered holder's claim has run out", async () => {
    // Prepare: m1 claims attempt 0 and its process dies; its message is then dead-lettered.
    const s = await owed();
    const { d, id, clock } = s;
    const quietMs = d.config.sweepPendingAfterSeconds * 1000;
    const claimedAt = clock.ms;
    const sentBefore = d.queue.on('callbacks').length;
    expect(await d.deliveries.claimDelivery(id, 0, 'm1', claimedAt + callbackClaimMs(d.config), claimedAt)).toBe(true);
    // Act: a pass within the quiet period; then the first pass past it, and its message.
    clock.ms = claimedAt + quietMs - 1;
    const early = await sweepOnce(d);
    clock.ms = claimedAt + quietMs + 1;
    const due = await sweepOnce(d);
    const requeued = d.queue.on('callbacks').slice(sentBefore);
    const outcome = await dispatch(s, 'sweeper-message');
    // Assess
    expect(quietMs).toBeGreaterThan(callbackClaimMs(d.config));
    expect(early.callbacksRequeued).toBe(0);
    expect(due.callbacksRequeued).toBe(1);
    expect(requeued).toHaveLength(1);
    expect(outcome).toBe('delivered');
    expect(s.posts).toHaveLength(1);
  });

  it('drops a re-queued message that finds a live claim, and a later pass gets the callback sent', async () => {
    // Prepare: attempt 0's message sat in the queue past the quiet period, so the sweeper's
    // re-queue runs while that message holds the claim; then the holder dies unrecorded.
    const s = await owed();
    const { d, id, clock } = s;
    const quietMs = d.config.sweepPendingAfterSeconds * 1000;
    clock.ms += quietMs + 1;
    expect(await d.deliveries.claimDelivery(id, 0, 'm1', clock.ms + callbackClaimMs(d.config), clock.ms)).toBe(true);
    // Act
    const first = await sweepOnce(d);
    const dropped = await dispatch(s, 'requeue-1');
    clock.ms += quietMs + 1;
    const second = await sweepOnce(d);
    const sent = await dispatch(s, 'requeue-2');
    // Assess
    expect([first.callbacksRequeued, second.callbacksRequeued]).toEqual([1, 1]);
    expect([dropped, sent]).toEqual(['claimed_elsewhere', 'delivered']);
    expect(s.posts).toHaveLength(1);
  });

  it("at a local start-up, lets the re-queued message take over the dead process's live claim at once", async () => {
    // Prepare
    const s = await owed();
    const { d, id, clock } = s;
    expect(await d.deliveries.claimDelivery(id, 0, 'm1', clock.ms + callbackClaimMs(d.config), clock.ms)).toBe(true);
    // Act
    const swept = await sweepOnce(d, { startup: true });
    const outcome = await dispatch(s, 'startup-message');
    const oldMessageBack = await dispatch(s, 'm1');
    // Assess
    expect(swept.callbacksRequeued).toBe(1);
    expect([outcome, oldMessageBack]).toEqual(['delivered', 'skipped']);
    expect(s.posts).toHaveLength(1);
  });
});

describe("the owner's redelivery", () => {
  it('is one more attempt under the same webhook-id, sent once however many messages ask for it', async () => {
    // Prepare: attempt 0 delivered; the owner asks again.
    const s = await owed();
    expect(await dispatch(s, 'm1')).toBe('delivered');
    await redeliver(s.d, 'echo', s.id);
    const posts = holdPosts(s);
    // Act: the redelivery's message and a duplicate of it, at once; then a stale one.
    const first = dispatch(s, 'redeliver-1');
    while (s.posts.length < 2) await settle();
    const second = dispatch(s, 'redeliver-2');
    for (let i = 0; i < 20; i += 1) await settle();
    posts.open();
    const [outcome, duplicate] = await Promise.all([first, second]);
    const stale = await dispatch(s, 'm1');
    // Assess
    expect([outcome, duplicate, stale]).toEqual(['delivered', 'claimed_elsewhere', 'skipped']);
    expect(s.posts).toHaveLength(2);
    expect(new Set(s.posts).size).toBe(1);
    expect((await s.d.executions.get(s.id, new Date(s.clock.ms), true))?.callback_delivery).toMatchObject({
      attempts: 2,
      outcome: 'delivered',
    });
  });
});

describe('ASSET outputs in callbacks', () => {
  it('carry a link minted afresh for each attempt, at the base URL the execution was submitted at', async () => {
    // Prepare: the finished execution's output is an asset (as the engine records one).
    const s = await owed();
    const item = (s.d.executions as MemoryExecutions).items.get(s.id);
    if (!item) throw new Error('no execution');
    Object.assign(item, {
      outputs: {},
      output_assets: {
        out: { key: `d/${item.deployment_id}/e/${s.id}/node.x`, media_type: 'image/png', bytes: 3, sha256: 'ab'.repeat(32) },
      },
    });
    let status = 500;
    s.answer.next = async () => status;

    // Act: a failed attempt, then the retry a few seconds later.
    expect(await dispatch(s, 'm1')).toBe('retry');
    s.clock.ms += 5_000;
    status = 204;
    expect(await dispatch(s, 'm2')).toBe('delivered');

    // Assess
    const links = s.bodies.map((b) => (JSON.parse(b) as { out: string[] }).out);
    expect(links).toHaveLength(2);
    for (const l of links) expect(l).toEqual([expect.stringMatching(/^https:\/\/api\.example\/v1\/assets\/v1\./)]);
    expect(links[0]?.[0]).not.toBe(links[1]?.[0]);
  });
});
