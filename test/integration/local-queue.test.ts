import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { JOURNAL, LocalQueue, LocalQueuePort, type LocalQueueOptions } from '../../lib/local/queue';
import { HANG_MS } from '../support/hang';

const run = promisify(execFile);

let dir: string;
let now: number;
const queues: LocalQueue[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'pipegate-queue-'));
  now = 1_700_000_000_000;
});

afterEach(async () => {
  await Promise.all(queues.splice(0).map((q) => q.stop()));
  await rm(dir, { recursive: true, force: true });
});

function queue(over: Partial<LocalQueueOptions> = {}): LocalQueue {
  const q = new LocalQueue({
    dir,
    name: 'executions',
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 3,
    batchSize: 10,
    pollIntervalMs: 5,
    clock: () => now,
    ...over,
  });
  queues.push(q);
  return q;
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = HANG_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

const files = async (name: string): Promise<string[]> =>
  (await readdir(path.join(dir, name)).catch(() => [])).filter((f) => f.endsWith('.json'));

/** The messages the queue's journal holds on disk, in order: each line a message's state or its deletion. */
async function stored(name: string): Promise<string[]> {
  const text = await readFile(path.join(dir, name, JOURNAL), 'utf8').catch(() => '');
  const live = new Map<string, string>();
  for (const line of text.split('\n').filter((l) => l !== '')) {
    const record = JSON.parse(line) as { m?: { messageId: string; body: string }; d?: string };
    if (record.m) live.set(record.m.messageId, record.m.body);
    else if (record.d) live.delete(record.d);
  }
  return [...live.keys()];
}

describe('LocalQueue', () => {
  it('delivers a message that turns visible while a pump runs, without waiting for another message to wake it', async () => {
    // The clock moves on by 60 ms at every reading once the first delivery has failed: the pump
    // after it reads the clock before the message turns visible (100 ms) and its rescheduling
    // reads it after.
    let stepping = false;
    const q = queue({
      visibilityTimeoutSeconds: 0.1,
      pollIntervalMs: 60_000,
      clock: () => {
        const t = now;
        if (stepping) now += 60;
        return t;
      },
    });
    const second = gate();
    let calls = 0;
    q.start(async (event: SQSEvent): Promise<SQSBatchResponse> => {
      calls += 1;
      if (calls === 1) {
        now += 50;
        stepping = true;
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      }
      second.open();
      return { batchItemFailures: [] };
    });
    await q.send('{"execution_id":"e-1"}');
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise(
      (_, reject) => (timer = setTimeout(() => reject(new Error('the visible message was never delivered again')), HANG_MS)),
    );
    await Promise.race([second.wait, stalled]).finally(() => clearTimeout(timer));
    expect(calls).toBe(2);
  });

  it('keeps sent messages on disk for a new instance, and delivers them as SQS records', async () => {
    // Prepare
    const first = queue();
    const ids = [await first.send('{"n":1}'), await first.send('{"n":2}')];
    const second = queue();
    const records: SQSRecord[] = [];

    // Act
    const before = await second.depth();
    second.start(async (event) => {
      records.push(...event.Records);
    });
    await second.drain(5000);

    // Assess
    expect(before).toEqual({ visible: 2, inFlight: 0, delayed: 0 });
    expect(records.map((r) => r.messageId)).toEqual(ids);
    const record = records[0];
    expect(record).toEqual({
      messageId: ids[0],
      receiptHandle: expect.any(String),
      body: '{"n":1}',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(now),
        SenderId: '000000000000',
        ApproximateFirstReceiveTimestamp: String(now),
      },
      messageAttributes: {},
      md5OfBody: createHash('md5').update('{"n":1}').digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:local:000000000000:executions',
      awsRegion: 'local',
    });
    expect(await stored('executions')).toEqual([]);
    expect(await queue().depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('resolves send only once the message survives a killed process', async () => {
    // Prepare
    const script = [
      "const { LocalQueue } = require('./lib/local/queue');",
      `const q = new LocalQueue({ dir: ${JSON.stringify(dir)}, name: 'executions', visibilityTimeoutSeconds: 30, maxReceiveCount: 3, batchSize: 10 });`,
      "q.send('survivor').then((id) => { process.stdout.write(id); process.kill(process.pid, 'SIGKILL'); });",
    ].join('\n');

    // Act
    const child = await run(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: path.join(__dirname, '../..') }).catch(
      (err: { stdout: string; signal: string }) => err,
    );
    now = Date.now() + 1000;
    const after = queue();
    const received: string[] = [];
    after.start(async (event) => {
      received.push(...event.Records.map((r) => `${r.messageId}:${r.body}`));
    });
    await after.drain(5000);

    // Assess
    expect('signal' in child ? child.signal : null).toBe('SIGKILL');
    expect(child.stdout).toMatch(/^[0-9a-f-]{36}$/);
    expect(received).toEqual([`${child.stdout}:survivor`]);
  });

  it('cuts off a last line a killed process left half written, so the next line starts on its own', async () => {
    // Prepare
    const first = await queue().send('whole');
    await appendFile(path.join(dir, 'executions', JOURNAL), '{"m":{"messageId":"0a4c');
    const reopened = queue();

    // Act
    const atStart = await reopened.depth();
    const second = await reopened.send('after');
    const bodies: string[] = [];
    const third = queue();
    third.start(async (event) => {
      bodies.push(...event.Records.map((r) => r.body));
    });
    await third.drain(5000);

    // Assess
    expect(atStart).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
    expect(bodies).toEqual(['whole', 'after']);
    const lines = (await readFile(path.join(dir, 'executions', JOURNAL), 'utf8')).split('\n').filter((l) => l !== '');
    expect(lines.map((l) => (JSON.parse(l) as { m?: { messageId: string } }).m?.messageId).slice(0, 2)).toEqual([first, second]);
  });

  it('takes in the messages an earlier version kept one file each, and removes their files once the journal holds them', async () => {
    // Prepare
    const id = '6f1c2a47-9b1e-4c55-8f0e-2d7f3a9b1c11';
    const legacy = {
      messageId: id,
      body: 'from before',
      md5OfBody: createHash('md5').update('from before').digest('hex'),
      sentTimestamp: now - 1000,
      sequence: 0,
      receiveCount: 1,
      firstReceiveTimestamp: now - 900,
      visibleAt: now - 1,
      receiptHandle: 'old',
    };
    await mkdir(path.join(dir, 'executions'), { recursive: true });
    await writeFile(path.join(dir, 'executions', `${id}.json`), JSON.stringify(legacy));
    const q = queue();

    // Act
    const atStart = await q.depth();
    const onDisk = await stored('executions');
    const leftFiles = await files('executions');
    const records: SQSRecord[] = [];
    q.start(async (event) => {
      records.push(...event.Records);
    });
    await q.drain(5000);

    // Assess
    expect(atStart).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
    expect(onDisk).toEqual([id]);
    expect(leftFiles).toEqual([]);
    expect(records.map((r) => [r.messageId, r.body, r.attributes.ApproximateReceiveCount])).toEqual([[id, 'from before', '2']]);
  });

  it('rewrites a journal of mostly dead lines with the live messages alone, which a new instance still finds', async () => {
    // Prepare
    const q = queue({ compactBytes: 4096 });
    let delivered = 0;
    q.start(async (event): Promise<SQSBatchResponse> => {
      delivered += event.Records.length;
      return { batchItemFailures: event.Records.filter((r) => r.body.startsWith('keep')).map((r) => ({ itemIdentifier: r.messageId })) };
    });
    const kept = [await q.send('keep 1')];
    for (let i = 0; i < 100; i++) await q.send(`done ${i} ${'x'.repeat(100)}`);
    kept.push(await q.send('keep 2'));
    await waitFor(
      async () => delivered === 102 && (await q.depth()).inFlight === 2 && (await stored('executions')).length === 2,
      'deliveries',
    );

    // Act
    await q.stop();
    const size = (await stat(path.join(dir, 'executions', JOURNAL))).size;
    const reopened = queue();

    // Assess
    // 102 messages sent, received and deleted write ≈ 60 KB of lines; compaction keeps it near the threshold.
    expect(size).toBeLessThan(3 * 4096);
    expect(await stored('executions')).toEqual(kept);
    expect(await reopened.depth()).toEqual({ visible: 0, inFlight: 2, delayed: 0 });
  });

  it('hides a received message for the visibility time-out and redelivers it when the consumer throws', async () => {
    // Prepare
    const q = queue({ onError: () => undefined });
    await q.send('work');
    const deliveries: SQSRecord[] = [];
    q.start(async (event) => {
      deliveries.push(...event.Records);
      if (deliveries.length === 1) throw new Error('transient');
    });
    await waitFor(() => deliveries.length === 1, 'first delivery');
    await waitFor(async () => (await q.depth()).inFlight === 1, 'failed batch to settle');

    // Act
    now += 29_000;
    const stillHidden = await q.depth();
    now += 1_000;
    await waitFor(() => deliveries.length === 2, 'redelivery');
    await q.drain(5000);

    // Assess
    expect(stillHidden).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    expect(deliveries.map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect(deliveries[1]?.receiptHandle).not.toBe(deliveries[0]?.receiptHandle);
    // As on SQS, a redelivery keeps the message id: a callback's claim on an attempt is named by it.
    expect(deliveries[1]?.messageId).toBe(deliveries[0]?.messageId);
    expect(deliveries[1]?.attributes.ApproximateFirstReceiveTimestamp).toBe(deliveries[0]?.attributes.ApproximateFirstReceiveTimestamp);
  });

  it('deletes the records a partial batch response does not name, and keeps the named ones', async () => {
    // Prepare
    const q = queue();
    await q.send('a');
    const b = await q.send('b');
    await q.send('c');
    const seen: string[][] = [];
    q.start(async (event): Promise<SQSBatchResponse> => {
      seen.push(event.Records.map((r) => r.body));
      return seen.length === 1 ? { batchItemFailures: [{ itemIdentifier: b }] } : { batchItemFailures: [] };
    });
    await waitFor(async () => (await q.depth()).inFlight === 1 && (await stored('executions')).length === 1, 'partial delete');

    // Act
    const leftOnDisk = await stored('executions');
    now += 30_000;
    await q.drain(5000);

    // Assess
    expect(leftOnDisk).toEqual([b]);
    expect(seen).toEqual([['a', 'b', 'c'], ['b']]);
  });

  it('treats a batch response naming a record outside the batch as a failure of the whole batch', async () => {
    // Prepare
    const q = queue();
    await q.send('a');
    await q.send('b');
    let calls = 0;

    // Act
    q.start(async () => {
      calls += 1;
      return { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] };
    });
    await waitFor(() => calls === 1, 'delivery');
    await waitFor(async () => (await q.depth()).inFlight === 2, 'batch to settle');

    // Assess
    expect(await stored('executions')).toHaveLength(2);
  });

  it('moves a message received maxReceiveCount times to the dead-letter queue', async () => {
    // Prepare
    const q = queue({ maxReceiveCount: 2, onError: () => undefined });
    const id = await q.send('poison');
    let calls = 0;
    q.start(async () => {
      calls += 1;
      throw new Error('always fails');
    });

    // Act
    await waitFor(() => calls === 1, 'first receive');
    now += 30_000;
    await waitFor(() => calls === 2, 'second receive');
    await waitFor(async () => (await q.depth()).inFlight === 1, 'second failure to settle');
    now += 30_000;
    await q.drain(5000);

    // Assess
    expect(calls).toBe(2);
    expect(await q.deadLetters()).toEqual([{ messageId: id, body: 'poison', receiveCount: 2 }]);
    expect(await stored('executions')).toEqual([]);
    expect(await files('executions-dlq')).toEqual([`${id}.json`]);
    expect(await queue().deadLetters()).toEqual([{ messageId: id, body: 'poison', receiveCount: 2 }]);
  });

  it('holds a delayed message back until its delay has passed', async () => {
    // Prepare
    const q = queue();
    const bodies: string[] = [];
    q.start(async (event) => {
      bodies.push(...event.Records.map((r) => r.body));
    });

    // Act
    await q.send('later', { delaySeconds: 60 });
    await q.send('now');
    await waitFor(() => bodies.length === 1, 'undelayed message');
    const held = await q.depth();
    now += 59_000;
    await new Promise((resolve) => setTimeout(resolve, 30));
    const stillHeld = [...bodies];
    now += 1_000;
    await q.drain(5000);

    // Assess
    expect(held).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    expect(stillHeld).toEqual(['now']);
    expect(bodies).toEqual(['now', 'later']);
  });

  it('refuses what SQS refuses', async () => {
    // Prepare
    const q = queue();

    // Act / Assess
    await expect(q.send('x', { delaySeconds: 901 })).rejects.toThrow(RangeError);
    await expect(q.send('x', { delaySeconds: 1.5 })).rejects.toThrow(RangeError);
    await expect(q.send('')).rejects.toThrow('empty');
    await expect(q.send('x'.repeat(1024 * 1024 + 1))).rejects.toThrow('1 MiB');
    await expect(q.send('bad \u0000 char')).rejects.toThrow('characters');
    expect(await q.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('never hands the consumer more than `concurrency` batches at once', async () => {
    // Prepare
    const q = queue({ batchSize: 1, concurrency: 2 });
    for (let i = 0; i < 5; i += 1) await q.send(`m${i}`);
    const release = gate();
    let active = 0;
    let maxActive = 0;
    let calls = 0;
    q.start(async () => {
      calls += 1;
      active += 1;
      maxActive = Math.max(maxActive, active);
      await release.wait;
      active -= 1;
    });
    await waitFor(() => active === 2, 'two batches in hand');

    // Act
    await new Promise((resolve) => setTimeout(resolve, 50));
    const callsWhileFull = calls;
    release.open();
    await q.drain(5000);

    // Assess
    expect(callsWhileFull).toBe(2);
    expect(calls).toBe(5);
    expect(maxActive).toBe(2);
  });

  it('never has one message in two batches at once, under concurrency', async () => {
    // Prepare
    const q = queue({ batchSize: 3, concurrency: 4 });
    const sent = new Set<string>();
    for (let i = 0; i < 40; i += 1) sent.add(await q.send(`m${i}`));
    const inHand = new Set<string>();
    const overlaps: string[] = [];
    const delivered: string[] = [];
    let maxBatches = 0;
    let batches = 0;

    // Act
    q.start(async (event: SQSEvent) => {
      batches += 1;
      maxBatches = Math.max(maxBatches, batches);
      for (const r of event.Records) {
        if (inHand.has(r.messageId)) overlaps.push(r.messageId);
        inHand.add(r.messageId);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 5)));
      for (const r of event.Records) {
        inHand.delete(r.messageId);
        delivered.push(r.messageId);
      }
      batches -= 1;
    });
    await q.drain(10_000);

    // Assess
    expect(overlaps).toEqual([]);
    expect(delivered.sort()).toEqual([...sent].sort());
    expect(maxBatches).toBeLessThanOrEqual(4);
  });

  it('after a crash, makes an in-flight message visible again once its visibility time-out ends', async () => {
    // Prepare
    const crashed = queue();
    const sent = await crashed.send('in flight');
    const hang = gate();
    let received = false;
    crashed.start(async () => {
      received = true;
      await hang.wait;
      throw new Error('the process died here');
    });
    await waitFor(() => received, 'first receive');
    const restarted = queue({ onError: () => undefined });
    const counts: string[] = [];
    const ids: string[] = [];

    // Act
    const atRestart = await restarted.depth();
    restarted.start(async (event) => {
      counts.push(...event.Records.map((r) => r.attributes.ApproximateReceiveCount));
      ids.push(...event.Records.map((r) => r.messageId));
    });
    now += 30_000;
    await waitFor(() => counts.length === 1, 'redelivery after restart');
    hang.open();

    // Assess
    expect(atRestart).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    expect(counts).toEqual(['2']);
    // The same message id after a restart, so the dead holder's message takes its claim again.
    expect(ids).toEqual([sent]);
  });
});

describe('LocalQueuePort', () => {
  it('sends JSON bodies to the named queue with the delay clamped to SQS limits', async () => {
    // Prepare
    const executions = queue({ name: 'executions' });
    const callbacks = queue({ name: 'callbacks' });
    const port = new LocalQueuePort({ executions, callbacks });
    const got: string[] = [];
    callbacks.start(async (event) => {
      got.push(...event.Records.map((r) => r.body));
    });

    // Act
    await port.send('executions', { execution_id: 'e-1' });
    await port.send('callbacks', { execution_id: 'e-2' }, { delaySeconds: 3600 });
    const held = await callbacks.depth();
    now += 899_000;
    await new Promise((resolve) => setTimeout(resolve, 30));
    const early = [...got];
    now += 1_000;
    await callbacks.drain(5000);

    // Assess
    expect(await executions.depth()).toEqual({ visible: 1, inFlight: 0, delayed: 0 });
    expect(held).toEqual({ visible: 0, inFlight: 0, delayed: 1 });
    expect(early).toEqual([]);
    expect(got).toEqual(['{"execution_id":"e-2"}']);
  });
});
