/**
 * Lambda functions from their bundled assets, each invocation in a worker thread of its own
 * function: the worker is that function's execution environment (its own `process.env`, its
 * module scope kept warm between invocations, one invocation at a time), the template's timeout
 * is enforced by ending the worker as Lambda ends a sandbox, and its MemorySize bounds the V8
 * heap. Events and results cross as JSON, as they cross the Lambda service.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { AWSLAMBDA_SHIM_SOURCE } from '../local/gateway/awslambda-shim';

/** What the template says about one function, resolved. */
export interface FunctionSpec {
  /** Physical function name (what AWS_LAMBDA_FUNCTION_NAME says). */
  name: string;
  arn: string;
  /** Absolute path of the bundle's module and the export the Handler names. */
  file: string;
  exportName: string;
  /** The asset directory (LAMBDA_TASK_ROOT). */
  root: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** The whole environment of the sandbox: the template's variables and the runtime's own. */
  env: Record<string, string>;
}

export interface FunctionHostOptions {
  /** Environments kept per function at most; more concurrent invocations wait (default 4). */
  maxConcurrency?: number;
  /** Each line a function writes to stdout or stderr (its CloudWatch log). Default: dropped. */
  log?: (fn: string, line: string) => void;
  /**
   * The function's concurrency as Lambda enforces it (the scale model's): a slot per invocation
   * and the function giving it back, or undefined, and the invocation is refused with
   * TooManyRequestsException instead of waiting for an environment.
   */
  concurrency?: () => (() => void) | undefined;
  /** The Init phase limit (default INIT_LIMIT_MS, Lambda's); tests shorten it. */
  initLimitMs?: number;
}

/** A failed invocation, as the Lambda service reports it (errorType, errorMessage, trace). */
export class FunctionError extends Error {
  constructor(
    readonly errorType: string,
    message: string,
    readonly trace: string[] = [],
  ) {
    super(message);
    this.name = errorType;
  }
}

/** Lambda's synchronous invocation payload limit, each way. */
const MAX_SYNC_PAYLOAD_BYTES = 6 * 1024 * 1024;

// Plain JavaScript evaluated in the worker: the Node.js runtime's job of providing `awslambda`,
// loading the handler once and calling it per event with a context whose clock runs out at the
// deadline. Invoked with `stream` (InvokeWithResponseStream) the bytes go to the parent chunk by
// chunk, each acknowledged before the next is taken (so a slow client slows the function, as on
// Lambda); a buffered handler's result is then one chunk. Invoked without, a streaming handler's
// bytes become the payload.
const BOOTSTRAP = `
${AWSLAMBDA_SHIM_SOURCE}
const { parentPort, workerData } = require('node:worker_threads');
const { Writable } = require('node:stream');
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const acks = new Map();
const cancels = new Map();
let handler;
let initError;
try {
  const mod = require(workerData.file);
  handler = mod[workerData.exportName];
  if (typeof handler !== 'function') throw Object.assign(new Error(workerData.exportName + ' is undefined or not exported'), { name: 'Runtime.HandlerNotFound' });
} catch (err) {
  initError = err;
}
parentPort.postMessage({ kind: 'ready' });
const ended = (out) => new Promise((resolve) => out.on('close', () => resolve(out.writableFinished)));
parentPort.on('message', async (msg) => {
  if (msg.kind === 'ack') {
    const cb = acks.get(msg.id);
    acks.delete(msg.id);
    if (cb) cb();
    return;
  }
  if (msg.kind === 'cancel') {
    const cancel = cancels.get(msg.id);
    if (cancel) cancel();
    return;
  }
  // The invocation's clock starts when the runtime takes the event, after the module loaded.
  const deadline = Date.now() + msg.timeoutMs;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: workerData.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: workerData.arn,
    memoryLimitInMB: String(workerData.memoryMb),
    awsRequestId: msg.requestId,
    logGroupName: '/aws/lambda/' + workerData.name,
    logStreamName: new Date().toISOString().slice(0, 10).replaceAll('-', '/') + '/[$LATEST]' + msg.requestId.replaceAll('-', ''),
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined, fail: () => undefined, succeed: () => undefined,
  };
  try {
    if (initError) throw initError;
    const event = JSON.parse(msg.event);
    const streaming = handler[STREAMING] === 'response';
    if (msg.stream) {
      const out = new Writable({
        write(chunk, _encoding, cb) {
          acks.set(msg.id, cb);
          parentPort.postMessage({ id: msg.id, kind: 'chunk', data: new Uint8Array(chunk) });
        },
      });
      cancels.set(msg.id, () => out.destroy(new Error('the response stream was closed by its reader')));
      const finished = ended(out);
      try {
        if (streaming) await handler(event, out, context);
        else out.write(JSON.stringify((await handler(event, context)) ?? null));
      } finally {
        if (!out.writableEnded && !out.destroyed) out.end();
      }
      const ok = await finished;
      cancels.delete(msg.id);
      acks.delete(msg.id);
      parentPort.postMessage(ok ? { id: msg.id, kind: 'end' } : { id: msg.id, ok: false, errorType: 'Runtime.StreamClosed', errorMessage: 'the response stream closed before it ended', trace: [] });
      return;
    }
    if (streaming) {
      const parts = [];
      const out = new Writable({ write(chunk, _encoding, cb) { parts.push(Buffer.from(chunk)); cb(); } });
      const finished = ended(out);
      await handler(event, out, context);
      if (!out.writableEnded && !out.destroyed) out.end();
      await finished;
      const text = Buffer.concat(parts).toString('utf8');
      let payload = text;
      try { JSON.parse(text); } catch { payload = JSON.stringify(text); }
      parentPort.postMessage({ id: msg.id, ok: true, payload });
      return;
    }
    const result = await handler(event, context);
    parentPort.postMessage({ id: msg.id, ok: true, payload: result === undefined ? 'null' : JSON.stringify(result) });
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    parentPort.postMessage({ id: msg.id, ok: false, errorType: initError === err && !String(e.name).startsWith('Runtime.') ? 'Runtime.ImportModuleError' : e.name, errorMessage: e.message, trace: String(e.stack || '').split('\\n') });
  }
});
`;

interface Pending {
  resolve: (payload: string) => void;
  reject: (err: Error) => void;
  /** A streamed invocation's next chunk, and its end. */
  chunk?: (data: Uint8Array) => void;
  end?: () => void;
}

interface Sandbox {
  worker: Worker;
  pending: Map<string, Pending>;
  /**
   * Settles when an invocation's time-out starts counting: once the module has loaded (the
   * Init phase), or INIT_LIMIT_MS after the environment was made, whichever comes first.
   */
  initialized: Promise<void>;
}

/**
 * Lambda's Init phase limit. Init (loading the module, its top-level code) is not part of an
 * invocation's time-out; an Init that outlasts this limit is made again inside the first
 * invocation, under its time-out. So the time-out starts at the end of Init, or at this limit.
 */
export const INIT_LIMIT_MS = 10_000;

/** One function's warm environments and the invocations waiting for one. */
export class FunctionHost {
  private readonly idle: Sandbox[] = [];
  private readonly all = new Set<Sandbox>();
  private readonly waiting: Array<(s: Sandbox) => void> = [];
  private readonly maxConcurrency: number;
  private stopped = false;
  /** Invocations so far, and how many of them started an environment (cold starts). */
  readonly stats = { invocations: 0, coldStarts: 0, timeouts: 0, throttles: 0 };

  constructor(
    readonly spec: FunctionSpec,
    private readonly options: FunctionHostOptions = {},
  ) {
    this.maxConcurrency = options.maxConcurrency ?? 4;
  }

  /**
   * What both invocations check first, as Lambda does: the request's size, a concurrency slot
   * (the scale model's; refused, not queued), then a sandbox. The caller gives the slot back.
   */
  private async begin(event: unknown, operation: string): Promise<{ text: string; sandbox: Sandbox; slot: (() => void) | undefined }> {
    if (this.stopped) throw new FunctionError('Lambda.ServiceException', `${this.spec.name} is stopped`);
    const text = JSON.stringify(event ?? null);
    if (Buffer.byteLength(text, 'utf8') > MAX_SYNC_PAYLOAD_BYTES) {
      throw new FunctionError(
        'RequestEntityTooLargeException',
        `Request must be smaller than ${MAX_SYNC_PAYLOAD_BYTES} bytes for the ${operation} operation`,
      );
    }
    const slot = this.options.concurrency?.();
    if (this.options.concurrency && !slot) {
      this.stats.throttles += 1;
      throw new FunctionError('TooManyRequestsException', 'Rate Exceeded.');
    }
    try {
      const sandbox = await this.acquire();
      this.stats.invocations += 1;
      return { text, sandbox, slot: slot ?? undefined };
    } catch (err) {
      slot?.();
      throw err;
    }
  }

  /** Invokes synchronously (RequestResponse): the function's JSON result, or a FunctionError. */
  async invoke(event: unknown): Promise<unknown> {
    const { text, sandbox, slot } = await this.begin(event, 'InvokeFunction');
    const id = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    try {
      const payload = await new Promise<string>((resolve, reject) => {
        // Lambda ends the sandbox at the deadline; the next invocation starts a new one.
        const timer = this.timeout(sandbox, timeoutMs);
        sandbox.pending.set(id, {
          resolve: (p) => {
            timer.clear();
            resolve(p);
          },
          reject: (e) => {
            timer.clear();
            reject(e);
          },
        });
        sandbox.worker.postMessage({ id, requestId: randomUUID(), event: text, timeoutMs });
      });
      if (Buffer.byteLength(payload, 'utf8') > MAX_SYNC_PAYLOAD_BYTES) {
        throw new FunctionError(
          'Function.ResponseSizeTooLarge',
          `Response payload size exceeded maximum allowed payload size (${MAX_SYNC_PAYLOAD_BYTES} bytes).`,
        );
      }
      return JSON.parse(payload) as unknown;
    } finally {
      this.release(sandbox);
      slot?.();
    }
  }

  /**
   * Invokes with a response stream (InvokeWithResponseStream): the function's raw bytes as it
   * writes them, pulled as the reader reads. The time-out covers the whole stream; a reader
   * that stops reading (destroys the stream) closes the function's response stream.
   */
  async invokeStream(event: unknown): Promise<Readable> {
    const { text, sandbox, slot } = await this.begin(event, 'InvokeWithResponseStream');
    const id = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    let ackDue = false;
    let settled = false;
    const ack = () => sandbox.worker.postMessage({ id, kind: 'ack' });
    const body = new Readable({
      read() {
        if (ackDue) {
          ackDue = false;
          ack();
        }
      },
      destroy(err, cb) {
        if (!settled) sandbox.worker.postMessage({ id, kind: 'cancel' });
        cb(err);
      },
    });
    const timer = this.timeout(sandbox, timeoutMs);
    const settle = () => {
      settled = true;
      timer.clear();
      sandbox.pending.delete(id);
      this.release(sandbox);
      slot?.();
    };
    sandbox.pending.set(id, {
      chunk: (data) => {
        if (body.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength))) ack();
        else ackDue = true;
      },
      end: () => {
        settle();
        body.push(null);
      },
      resolve: () => {
        settle();
        body.push(null);
      },
      reject: (e) => {
        settle();
        body.destroy(e);
      },
    });
    sandbox.worker.postMessage({ id, requestId: randomUUID(), event: text, timeoutMs, stream: true });
    return body;
  }

  /** The invocation's time-out, counted from the end of its environment's Init (see INIT_LIMIT_MS). */
  private timeout(sandbox: Sandbox, timeoutMs: number): { clear: () => void } {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let cleared = false;
    void sandbox.initialized.then(() => {
      if (cleared) return;
      timer = setTimeout(() => {
        this.stats.timeouts += 1;
        this.discard(sandbox, new FunctionError('Sandbox.Timedout', `Task timed out after ${this.spec.timeoutSeconds.toFixed(2)} seconds`));
      }, timeoutMs);
    });
    return {
      clear: () => {
        cleared = true;
        clearTimeout(timer);
      },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const workers = [...this.all];
    for (const s of workers) this.discard(s, new FunctionError('Lambda.ServiceException', `${this.spec.name} stopped`));
    await Promise.all(workers.map((s) => s.worker.terminate().catch(() => undefined)));
  }

  private async acquire(): Promise<Sandbox> {
    const warm = this.idle.pop();
    if (warm) return warm;
    if (this.all.size < this.maxConcurrency) return this.spawn();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(s: Sandbox): void {
    const next = this.waiting.shift();
    if (this.all.has(s)) {
      if (next) next(s);
      else this.idle.push(s);
    } else if (next && !this.stopped) {
      // Its environment ended (timed out, crashed): the waiting invocation gets a new one.
      next(this.spawn());
    }
  }

  private spawn(): Sandbox {
    this.stats.coldStarts += 1;
    const { spec } = this;
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      env: spec.env,
      workerData: { file: spec.file, exportName: spec.exportName, name: spec.name, arn: spec.arn, memoryMb: spec.memoryMb },
      // MemorySize stands for the heap the function may use; past it the environment dies.
      resourceLimits: { maxOldGenerationSizeMb: Math.max(64, spec.memoryMb) },
      stdout: true,
      stderr: true,
    });
    let initDone: () => void = () => undefined;
    const initialized = new Promise<void>((resolve) => {
      initDone = resolve;
    });
    const initLimit = setTimeout(initDone, this.options.initLimitMs ?? INIT_LIMIT_MS);
    initLimit.unref();
    void initialized.then(() => clearTimeout(initLimit));
    const sandbox: Sandbox = { worker, pending: new Map(), initialized };
    this.all.add(sandbox);
    const log = this.options.log;
    for (const stream of [worker.stdout, worker.stderr]) {
      let rest = '';
      stream.on('data', (chunk: Buffer) => {
        if (!log) return;
        const lines = (rest + chunk.toString('utf8')).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) if (line !== '') log(spec.name, line);
      });
    }
    worker.on(
      'message',
      (m: {
        id: string;
        kind?: 'chunk' | 'end' | 'ready';
        data?: Uint8Array;
        ok?: boolean;
        payload?: string;
        errorType?: string;
        errorMessage?: string;
        trace?: string[];
      }) => {
        if (m.kind === 'ready') {
          initDone();
          return;
        }
        const p = sandbox.pending.get(m.id);
        if (!p) return;
        if (m.kind === 'chunk') {
          if (m.data) p.chunk?.(m.data);
          return;
        }
        sandbox.pending.delete(m.id);
        if (m.kind === 'end') {
          p.end?.();
          return;
        }
        if (m.ok) p.resolve(m.payload ?? 'null');
        else p.reject(new FunctionError(m.errorType ?? 'Error', m.errorMessage ?? '', m.trace ?? []));
      },
    );
    worker.on('error', (err: Error & { code?: string }) => {
      const type = err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'Runtime.OutOfMemory' : 'Runtime.ExitError';
      this.discard(sandbox, new FunctionError(type, `${spec.name}: ${err.message}`));
    });
    worker.on('exit', (code) =>
      this.discard(sandbox, new FunctionError('Runtime.ExitError', `${spec.name}: the runtime exited (status ${code})`)),
    );
    return sandbox;
  }

  private discard(s: Sandbox, err: Error): void {
    if (this.all.delete(s)) {
      const at = this.idle.indexOf(s);
      if (at !== -1) this.idle.splice(at, 1);
      void s.worker.terminate().catch(() => undefined);
    }
    for (const p of s.pending.values()) p.reject(err);
    s.pending.clear();
  }
}
