import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { close as closeFd, fdatasync as fdatasyncFd, open as openFd, write as writeFd } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, truncate, unlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import { clampDelaySeconds, SQS_MAX_DELAY_SECONDS } from '../../functions/adapters/sqs.queue';
import type { QueueName, QueuePort } from '../../functions/core/ports';

export interface LocalQueueOptions {
  /** Data directory; messages live in `<dir>/<name>/journal.log`, dead letters in `<dir>/<name>-dlq/`. */
  dir: string;
  name: string;
  /** Seconds a received message stays invisible (whole seconds on SQS; fractions allowed here). */
  visibilityTimeoutSeconds: number;
  /** Receives before the next receive moves the message to the dead-letter queue. */
  maxReceiveCount: number;
  batchSize: number;
  /** Batches handed to the consumer at once (default 4). */
  concurrency?: number;
  /** Longest sleep while waiting for delayed or in-flight messages to become visible (default 1000). */
  pollIntervalMs?: number;
  /** Milliseconds since the epoch (default Date.now). */
  clock?: () => number;
  /** A consumer threw, or the queue could not read or write its files. */
  onError?: (err: unknown) => void;
  /** The journal is rewritten once it is over this size and mostly dead lines (default 1 MiB; tests lower it). */
  compactBytes?: number;
}

export type QueueConsumer = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

export interface QueueDepth {
  visible: number;
  inFlight: number;
  delayed: number;
}

export interface DeadLetter {
  messageId: string;
  body: string;
  receiveCount: number;
}

const REGION = 'local';
const ACCOUNT = '000000000000';
/** SQS's message size limit. */
const MAX_BODY_BYTES = 1024 * 1024;
// SQS accepts only these characters in a message body (XML 1.0's Char production).
// eslint-disable-next-line no-control-regex
const INVALID_BODY_CHAR = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

const StoredMessage = v.object({
  messageId: v.pipe(v.string(), v.uuid()),
  body: v.string(),
  md5OfBody: v.string(),
  sentTimestamp: v.number(),
  /** Breaks ties between messages sent in the same millisecond. */
  sequence: v.number(),
  receiveCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  firstReceiveTimestamp: v.nullable(v.number()),
  visibleAt: v.number(),
  receiptHandle: v.nullable(v.string()),
});
type StoredMessage = v.InferOutput<typeof StoredMessage>;

/** A journal line: a message's whole state (`m`), or its deletion (`d`, the message id). */
const JournalRecord = v.union([v.object({ m: StoredMessage }), v.object({ d: v.string() })]);

/** The journal's file name in the queue's folder. */
export const JOURNAL = 'journal.log';
/** The journal is rewritten with the live messages alone once it exceeds this and four times what they take. */
const COMPACT_BYTES = 1024 * 1024;

let nextSequence = 0;

interface PendingLine {
  /** The message the line is about. */
  id: string;
  /** The line, newline included; for a delete, `deleted` is set. */
  line: string;
  deleted: boolean;
  /** Flushed to the device before it resolves (a send), or only written (receives, deletes). */
  durable: boolean;
  done: (err?: unknown) => void;
}

/**
 * A durable queue with the SQS semantics the Lambda event source relies on: at-least-once
 * delivery in batches, visibility time-out, receive count, partial batch failure and a
 * dead-letter queue. Every change of a message (sent, received, deleted) is one line appended to
 * the queue's journal, so a killed process loses nothing: a message that was in flight becomes
 * visible again once its visibility time-out has passed, exactly as in SQS. A send resolves once
 * its line is flushed to the device; sends that arrive while a flush is under way share the next
 * one (group commit). The journal is rewritten with the live messages alone once it is mostly
 * dead lines. One process at a time owns a directory.
 */
export class LocalQueue {
  readonly name: string;
  readonly arn: string;
  private readonly folder: string;
  private readonly journal: string;
  private readonly dlqFolder: string;
  private readonly visibilityMs: number;
  private readonly maxReceiveCount: number;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly pollIntervalMs: number;
  private readonly clock: () => number;
  private readonly onError: (err: unknown) => void;
  private readonly compactBytes: number;

  /** Insertion order is send order, so receives are roughly first in, first out. */
  private readonly messages = new Map<string, StoredMessage>();
  private loading: Promise<void> | undefined;
  private consumer: QueueConsumer | undefined;
  private readonly active = new Set<Promise<void>>();
  /** Journal lines not written yet, in order; one writer at a time takes them all. */
  private pendingLines: PendingLine[] = [];
  private writer: Promise<void> | undefined;
  private fd: number | undefined;
  /** The journal's size, and its last line per live message (the rest of it is dead). */
  private journalBytes = 0;
  private liveBytes = 0;
  private readonly liveLines = new Map<string, string>();
  /** Dead-letter moves under way (a file each, then the journal's delete). */
  private readonly moving = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private wakeScheduled = false;

  constructor(opts: LocalQueueOptions) {
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(opts.name)) throw new Error(`Invalid queue name: ${opts.name}`);
    if (!(opts.visibilityTimeoutSeconds >= 0)) throw new Error('visibilityTimeoutSeconds must be >= 0');
    if (!Number.isInteger(opts.maxReceiveCount) || opts.maxReceiveCount < 1) throw new Error('maxReceiveCount must be a positive integer');
    if (!Number.isInteger(opts.batchSize) || opts.batchSize < 1) throw new Error('batchSize must be a positive integer');
    const concurrency = opts.concurrency ?? 4;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be a positive integer');
    this.name = opts.name;
    this.arn = `arn:aws:sqs:${REGION}:${ACCOUNT}:${opts.name}`;
    this.folder = path.join(opts.dir, opts.name);
    this.journal = path.join(this.folder, JOURNAL);
    this.dlqFolder = path.join(opts.dir, `${opts.name}-dlq`);
    this.visibilityMs = opts.visibilityTimeoutSeconds * 1000;
    this.maxReceiveCount = opts.maxReceiveCount;
    this.batchSize = opts.batchSize;
    this.concurrency = concurrency;
    this.pollIntervalMs = opts.pollIntervalMs ?? 1000;
    this.clock = opts.clock ?? Date.now;
    this.onError = opts.onError ?? (() => undefined);
    this.compactBytes = opts.compactBytes ?? COMPACT_BYTES;
  }

  /** Stores the message durably, then resolves with its id. */
  async send(body: string, opts?: { delaySeconds?: number }): Promise<string> {
    const delaySeconds = opts?.delaySeconds ?? 0;
    if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > SQS_MAX_DELAY_SECONDS) {
      throw new RangeError(`DelaySeconds must be an integer from 0 to ${SQS_MAX_DELAY_SECONDS}`);
    }
    if (body.length === 0) throw new Error('A message body must not be empty');
    if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) throw new Error('A message body must not exceed 1 MiB');
    if (INVALID_BODY_CHAR.test(body)) throw new Error('A message body contains characters SQS refuses');
    await this.ready();

    const now = this.clock();
    const message: StoredMessage = {
      messageId: randomUUID(),
      body,
      md5OfBody: createHash('md5').update(body, 'utf8').digest('hex'),
      sentTimestamp: now,
      sequence: nextSequence++,
      receiveCount: 0,
      firstReceiveTimestamp: null,
      visibleAt: now + delaySeconds * 1000,
      receiptHandle: null,
    };
    await this.append({ m: message }, true);
    this.messages.set(message.messageId, message);
    if (delaySeconds === 0) this.wake();
    else this.reschedule();
    return message.messageId;
  }

  /** Starts handing batches to the consumer, as a Lambda event source mapping does. */
  start(consumer: QueueConsumer): void {
    if (this.consumer) throw new Error(`Queue ${this.name} is already started`);
    this.consumer = consumer;
    this.ready().then(
      () => this.wake(),
      (err: unknown) => this.onError(err),
    );
  }

  /** Stops receiving, waits for the batches in hand and their journal lines, and closes the journal. */
  async stop(): Promise<void> {
    this.consumer = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
    await this.settleIo();
    const fd = this.fd;
    this.fd = undefined;
    if (fd !== undefined) await closeAsync(fd);
  }

  async depth(): Promise<QueueDepth> {
    await this.ready();
    const now = this.clock();
    const depth: QueueDepth = { visible: 0, inFlight: 0, delayed: 0 };
    for (const m of this.messages.values()) {
      if (m.visibleAt <= now) depth.visible += 1;
      else if (m.receiveCount > 0) depth.inFlight += 1;
      else depth.delayed += 1;
    }
    return depth;
  }

  /** Messages moved to `<name>-dlq`, oldest first. */
  async deadLetters(): Promise<DeadLetter[]> {
    await this.ready();
    await this.settleIo();
    const stored = await readFolder(this.dlqFolder, this.onError);
    return stored.map((m) => ({ messageId: m.messageId, body: m.body, receiveCount: m.receiveCount }));
  }

  /** Resolves once no message is left and no batch is in hand; rejects after timeoutMs. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.ready();
    while (this.messages.size > 0 || this.active.size > 0) {
      if (Date.now() > deadline) {
        throw new Error(`Queue ${this.name} still holds ${this.messages.size} message(s) after ${timeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await this.settleIo();
  }

  private ready(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  /**
   * Replays the journal. A last line cut short by a crash (its send never resolved) is cut off,
   * so the next line starts on a line of its own. Messages a version before the journal kept as
   * one file each are taken into it, and their files removed once it holds them.
   */
  private async load(): Promise<void> {
    await mkdir(this.folder, { recursive: true });
    const text = await readFile(this.journal, 'utf8').catch((err: unknown) => {
      if (isErrno(err, 'ENOENT')) return '';
      throw err;
    });
    const end = text.lastIndexOf('\n') + 1;
    if (end < text.length) await truncate(this.journal, Buffer.byteLength(text.slice(0, end), 'utf8'));
    this.journalBytes = Buffer.byteLength(text.slice(0, end), 'utf8');
    for (const line of text.slice(0, end).split('\n')) {
      if (line === '') continue;
      const parsed = v.safeParse(JournalRecord, safeJson(line));
      if (!parsed.success) {
        this.onError(new Error(`Skipping an unreadable line of ${this.journal}`));
        continue;
      }
      const record = parsed.output;
      if ('m' in record) this.messages.set(record.m.messageId, record.m);
      else this.messages.delete(record.d);
      this.written('m' in record ? record.m.messageId : record.d, `${line}\n`, 'd' in record);
    }
    const files = (await readFolder(this.folder, this.onError)).filter((m) => !this.messages.has(m.messageId));
    if (files.length === 0) return;
    await Promise.all(files.map((m) => this.append({ m }, true)));
    for (const m of files) this.messages.set(m.messageId, m);
    await Promise.all(files.map((m) => unlink(path.join(this.folder, `${m.messageId}.json`)).catch(() => undefined)));
  }

  /** Runs a pump soon, once, however many sends ask for it. */
  private wake(): void {
    if (!this.consumer || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (!this.consumer) return;
    const consumer = this.consumer;
    const now = this.clock();
    while (this.active.size < this.concurrency) {
      const batch = this.receive(now);
      if (batch.length === 0) break;
      const running: Promise<void> = this.deliver(consumer, batch).finally(() => {
        this.active.delete(running);
        this.wake();
      });
      this.active.add(running);
    }
    this.reschedule();
  }

  /**
   * ReceiveMessage: takes up to batchSize visible messages, counting the receive and hiding each
   * for the visibility time-out under a new receipt handle. Done synchronously, so no message
   * is in two batches unless its visibility time-out ran out first (as in SQS). A message
   * already received maxReceiveCount times goes to the dead-letter queue instead.
   */
  private receive(now: number): StoredMessage[] {
    const batch: StoredMessage[] = [];
    for (const m of this.messages.values()) {
      if (batch.length >= this.batchSize) break;
      if (m.visibleAt > now) continue;
      if (m.receiveCount >= this.maxReceiveCount) {
        this.messages.delete(m.messageId);
        this.deadLetter(m);
        continue;
      }
      m.receiveCount += 1;
      m.firstReceiveTimestamp ??= now;
      m.visibleAt = now + this.visibilityMs;
      m.receiptHandle = randomBytes(48).toString('base64');
      batch.push({ ...m });
    }
    return batch;
  }

  private async deliver(consumer: QueueConsumer, batch: StoredMessage[]): Promise<void> {
    try {
      // The receive is written before the consumer sees it, so a crash of the process cannot
      // undercount it. Not flushed to the device: losing a receive count to a power cut means at
      // most one extra delivery, which at-least-once delivery allows, and the flush is the
      // slowest step of a message's life.
      await Promise.all(batch.map((m) => this.append({ m }, false)));
    } catch (err) {
      this.onError(err);
      return;
    }
    let failed: Set<string> | 'all';
    try {
      failed = failedItems(await consumer({ Records: batch.map((m) => this.record(m)) }), batch);
    } catch (err) {
      this.onError(err);
      failed = 'all';
    }
    if (failed === 'all') return;
    await Promise.all(
      batch
        .filter((m) => !failed.has(m.messageId))
        .map((m) => {
          const current = this.messages.get(m.messageId);
          // DeleteMessage with a stale receipt handle succeeds without deleting anything.
          if (current?.receiptHandle !== m.receiptHandle) return undefined;
          this.messages.delete(m.messageId);
          // Likewise unflushed: a delete lost to a power cut is one redelivery, never a lost message.
          return this.append({ d: m.messageId }, false).catch(this.onError);
        }),
    );
  }

  /** The dead letter's own file first (flushed), then its delete from the journal. */
  private deadLetter(m: StoredMessage): void {
    const move = (async () => {
      await mkdir(this.dlqFolder, { recursive: true });
      await writeAtomic(this.dlqFolder, m.messageId, m);
      await this.append({ d: m.messageId }, true);
    })()
      .catch(this.onError)
      .finally(() => this.moving.delete(move));
    this.moving.add(move);
  }

  private record(m: StoredMessage): SQSRecord {
    return {
      messageId: m.messageId,
      receiptHandle: m.receiptHandle ?? '',
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentTimestamp),
        SenderId: ACCOUNT,
        ApproximateFirstReceiveTimestamp: String(m.firstReceiveTimestamp ?? m.sentTimestamp),
      },
      messageAttributes: {},
      md5OfBody: m.md5OfBody,
      eventSource: 'aws:sqs',
      eventSourceARN: this.arn,
      awsRegion: REGION,
    };
  }

  /** Sleeps until the next delayed or in-flight message turns visible, at most pollIntervalMs. */
  private reschedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.consumer) return;
    const now = this.clock();
    let next = Infinity;
    for (const m of this.messages.values()) {
      if (m.visibleAt > now) {
        if (m.visibleAt < next) next = m.visibleAt;
        continue;
      }
      // Visible, yet the pump that just ran did not take it: it turned visible after the pump
      // read the clock. Pump again now, or it would wait for some other message to wake the
      // queue. With every slot busy, the batch that finishes first wakes it anyway.
      if (this.active.size < this.concurrency) {
        this.wake();
        return;
      }
    }
    if (next === Infinity) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.pump();
      },
      Math.max(0, Math.min(this.pollIntervalMs, next - now)),
    );
    this.timer.unref();
  }

  /** Appends one journal line; `durable`: resolves once it is flushed to the device. */
  private append(record: v.InferOutput<typeof JournalRecord>, durable: boolean): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    const id = 'm' in record ? record.m.messageId : record.d;
    return new Promise<void>((resolve, reject) => {
      this.pendingLines.push({ id, line, deleted: 'd' in record, durable, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.startWriter();
    });
  }

  /**
   * One writer at a time. A line appended after the writer's last round but before it is
   * cleared (what that round's callers run next) starts the next writer once it is.
   */
  private startWriter(): void {
    if (this.writer) return;
    this.writer = this.writeLines().finally(() => {
      this.writer = undefined;
      if (this.pendingLines.length > 0) this.startWriter();
    });
  }

  /**
   * Writes every pending line in one write, then flushes once if any of them asked for it: the
   * lines that arrive meanwhile go together in the next round. Lines land in the order appended.
   */
  private async writeLines(): Promise<void> {
    while (this.pendingLines.length > 0) {
      const lines = this.pendingLines;
      this.pendingLines = [];
      const bytes = Buffer.from(lines.map((l) => l.line).join(''), 'utf8');
      try {
        const fd = await this.openJournal();
        await writeAll(fd, bytes);
        if (lines.some((l) => l.durable)) await fdatasyncAsync(fd);
      } catch (err) {
        // Whatever part of the round reached the file is cut off again: those lines failed, and
        // the next round must not start in the middle of one.
        await truncate(this.journal, this.journalBytes).catch(() => undefined);
        for (const l of lines) l.done(err);
        continue;
      }
      for (const l of lines) {
        this.written(l.id, l.line, l.deleted);
        l.done();
      }
      if (this.journalBytes > this.compactBytes && this.journalBytes > 4 * this.liveBytes) await this.compact().catch(this.onError);
    }
  }

  /** A line now in the journal: its message's state there, and the journal's live and total size. */
  private written(id: string, line: string, deleted: boolean): void {
    const bytes = Buffer.byteLength(line, 'utf8');
    this.journalBytes += bytes;
    const before = this.liveLines.get(id);
    if (before !== undefined) this.liveBytes -= Buffer.byteLength(before, 'utf8');
    if (deleted) this.liveLines.delete(id);
    else {
      this.liveLines.set(id, line);
      this.liveBytes += bytes;
    }
  }

  private async openJournal(): Promise<number> {
    if (this.fd !== undefined) return this.fd;
    await mkdir(this.folder, { recursive: true });
    const fd = await openAsync(this.journal, 'a');
    // A new journal's name must survive a power cut as its lines do.
    await syncFolder(this.folder);
    this.fd = fd;
    return fd;
  }

  /**
   * Rewrites the journal with its last line of each live message, atomically (written, flushed,
   * renamed over the old one). Runs between two rounds of the writer, so no line is written
   * meanwhile; those appended meanwhile go to the new journal.
   */
  private async compact(): Promise<void> {
    const text = [...this.liveLines.values()].join('');
    const temp = path.join(this.folder, `.tmp-journal-${randomUUID()}`);
    const file = await open(temp, 'w');
    try {
      await file.writeFile(text);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, this.journal);
    // From here on lines go to the new journal, whatever happens next.
    const old = this.fd;
    this.fd = undefined;
    this.journalBytes = Buffer.byteLength(text, 'utf8');
    this.liveBytes = this.journalBytes;
    if (old !== undefined) await closeAsync(old);
    await syncFolder(this.folder);
  }

  private async settleIo(): Promise<void> {
    while (this.writer || this.moving.size > 0) await Promise.allSettled([this.writer, ...this.moving]);
  }
}

const openAsync = promisify(openFd);
const closeAsync = promisify(closeFd);
const fdatasyncAsync = promisify(fdatasyncFd);
const writeAsync = promisify(writeFd);

/** write(2) until every byte is written (a write may take fewer). */
async function writeAll(fd: number, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await writeAsync(fd, bytes, offset, bytes.length - offset, null);
    offset += bytesWritten;
  }
}

/**
 * Lambda's reading of a batch response: nothing, or no batchItemFailures, means every record
 * succeeded; an entry that is not a record of this batch makes the whole batch fail.
 */
function failedItems(response: unknown, batch: StoredMessage[]): Set<string> | 'all' {
  if (typeof response !== 'object' || response === null || !('batchItemFailures' in response)) return new Set();
  const list = response.batchItemFailures;
  if (list === null || list === undefined) return new Set();
  if (!Array.isArray(list)) return 'all';
  const ids = new Set(batch.map((m) => m.messageId));
  const failed = new Set<string>();
  for (const item of list as unknown[]) {
    if (typeof item !== 'object' || item === null || !('itemIdentifier' in item)) return 'all';
    const id = item.itemIdentifier;
    if (typeof id !== 'string' || !ids.has(id)) return 'all';
    failed.add(id);
  }
  return failed;
}

/** Write to a temporary file, flush it, then rename over the old one: all or nothing. */
async function writeAtomic(folder: string, id: string, message: StoredMessage, flush = true): Promise<void> {
  const target = path.join(folder, `${id}.json`);
  const temp = path.join(folder, `.tmp-${id}-${randomUUID()}`);
  const file = await open(temp, 'w');
  try {
    await file.writeFile(JSON.stringify(message));
    if (flush) await file.sync();
  } finally {
    await file.close();
  }
  await rename(temp, target);
  if (flush) await syncFolder(folder);
}

/** Makes a rename or unlink itself survive a power cut; Windows cannot open folders for this. */
async function syncFolder(folder: string): Promise<void> {
  if (process.platform === 'win32') return;
  const dir = await open(folder, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

async function readFolder(folder: string, onError: (err: unknown) => void): Promise<StoredMessage[]> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  const out: StoredMessage[] = [];
  for (const name of names) {
    const file = path.join(folder, name);
    if (name.startsWith('.tmp-')) {
      // A write the process did not finish before it died; the previous version still stands.
      await unlink(file).catch(() => undefined);
      continue;
    }
    if (!name.endsWith('.json')) continue;
    const parsed = v.safeParse(StoredMessage, safeJson(await readFile(file, 'utf8')));
    if (parsed.success && `${parsed.output.messageId}.json` === name) out.push(parsed.output);
    else onError(new Error(`Skipping unreadable queue file ${file}`));
  }
  return out.sort((a, b) => a.sentTimestamp - b.sentTimestamp || a.sequence - b.sequence);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isErrno(err: unknown, code: string): boolean {
  // Not `instanceof Error`: errors from another realm (a test sandbox, a worker) fail that check.
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

/** QueuePort over local queues: the same JSON bodies and delays SqsQueuePort sends. */
export class LocalQueuePort implements QueuePort {
  constructor(private readonly queues: Readonly<Record<QueueName, LocalQueue>>) {}

  async send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void> {
    // Clamped to SQS's 0..900 seconds like on AWS, so a longer wish behaves the same in both places.
    await this.queues[queue].send(JSON.stringify(body), { delaySeconds: clampDelaySeconds(opts?.delaySeconds) });
  }
}
