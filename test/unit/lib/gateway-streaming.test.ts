/**
 * Response streaming, piece by piece: the `awslambda` stand-in (the runtime's wire format and
 * its quirk), `streamedHttpHandler` (errors before the stream through the catalog, bytes as they
 * come, a failure mid-body cutting the stream), and the gateway's reading of a streamed answer
 * (metadata split anywhere, malformed metadata refused, a streaming handler invoked buffered).
 */
import '../../../lib/local/gateway/awslambda-shim';
import { PassThrough, Readable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import fc from 'fast-check';
import { streamedHttpHandler } from '../../../functions/adapters/api';
import { awslambda, isStreamingHandler, type StreamingHandler } from '../../../functions/adapters/lambda-streaming';
import { createLogger } from '../../../functions/adapters/logger';
import { AppError } from '../../../functions/core/errors';
import { checkProxyResult } from '../../../lib/local/gateway/proxy-result';
import { invokeBufferedInProcess, invokeStreamingInProcess, METADATA_DELIMITER, readStreamed } from '../../../lib/local/gateway/streaming';
import { proxyEvent } from '../../support/events';
import { testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';
import { invokeStreamed } from '../../support/streamed';

/** Whether a line matching `seen` is logged within 10 s: the stream's end is logged asynchronously. */
async function logged(logs: readonly string[], seen: (line: string) => boolean): Promise<boolean> {
  for (let waited = 0; waited < 10_000; waited += 10) {
    if (logs.some(seen)) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

const context = { awsRequestId: 'req-1' } as Context;
const event = (): APIGatewayProxyEvent =>
  proxyEvent({ method: 'GET', resource: '/v1/assets/{token}', path: '/v1/assets/x', pathParameters: { token: 'x' } });

async function bytesOf(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(parts);
}

function withLogs() {
  const logs: string[] = [];
  const d = testDeps(memoryStores(), { log: createLogger('test', (line) => logs.push(line)) });
  return { d, logs };
}

async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}

describe('the awslambda stand-in', () => {
  it("marks a handler with the runtime's symbol and writes the metadata, then eight NUL bytes, before the first write", async () => {
    // Prepare
    const handler = awslambda().streamifyResponse(async (_e, stream) => {
      const out = awslambda().HttpResponseStream.from(stream, { statusCode: 201, headers: { a: 'b' } });
      out.write('body');
      out.end();
    });
    const stream = new PassThrough();
    // Act
    await handler(event(), stream, context);
    const raw = await bytesOf(stream);
    // Assess
    expect(isStreamingHandler(handler)).toBe(true);
    expect((handler as unknown as Record<symbol, unknown>)[Symbol.for('aws.lambda.runtime.handler.streaming')]).toBe('response');
    expect(
      raw.equals(Buffer.concat([Buffer.from('{"statusCode":201,"headers":{"a":"b"}}'), METADATA_DELIMITER, Buffer.from('body')])),
    ).toBe(true);
  });

  it('sends no metadata when the handler only calls end(chunk), as the runtime does', async () => {
    // Prepare
    const handler = awslambda().streamifyResponse(async (_e, stream) => {
      awslambda().HttpResponseStream.from(stream, { statusCode: 200 }).end('body');
    });
    // Act
    const outcome = await readStreamed(await invokeStreamingInProcess(handler, event(), context));
    // Assess
    expect(outcome).toEqual({ ok: false, reason: 'the stream ended before its metadata delimiter' });
  });

  it('keeps what the AWS SDK put on the global', () => {
    // Assess: @aws/lambda-invoke-store defines `awslambda` first in some processes.
    expect(typeof awslambda().streamifyResponse).toBe('function');
    expect(typeof awslambda().HttpResponseStream.from).toBe('function');
  });
});

describe('streamedHttpHandler', () => {
  it('sends the status and headers, then the bytes as they come', async () => {
    // Prepare
    const { d } = withLogs();
    const handler = streamedHttpHandler(async () => ({
      status: 200,
      headers: { 'content-type': 'image/png' },
      body: chunks(Buffer.from('ab'), Buffer.from('cd')),
    }))(() => d);
    // Act
    const res = await invokeStreamed(handler, event(), context);
    // Assess
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ 'content-type': 'image/png', 'x-request-id': 'req-1' });
    expect(res.bytes.toString()).toBe('abcd');
  });

  it('sends the metadata for an empty body too', async () => {
    // Prepare
    const { d } = withLogs();
    const handler = streamedHttpHandler(async () => ({ status: 200, headers: { 'content-length': '0' }, body: chunks() }))(() => d);
    // Act
    const res = await invokeStreamed(handler, event(), context);
    // Assess
    expect(res.statusCode).toBe(200);
    expect(res.bytes.length).toBe(0);
  });

  it('answers a failure before the first byte through the catalog, headers included', async () => {
    // Prepare
    const { d } = withLogs();
    const handler = streamedHttpHandler(async () => {
      throw new AppError('RangeNotSatisfiable', 'the object is 4 bytes', {}, { headers: { 'content-range': 'bytes */4' } });
    })(() => d);
    // Act
    const res = await invokeStreamed(handler, event(), context);
    // Assess
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */4');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: 'Range Not Satisfiable', detail: 'the object is 4 bytes' });
  });

  it('answers an unexpected failure 500 and logs it', async () => {
    // Prepare
    const { d, logs } = withLogs();
    const handler = streamedHttpHandler(async () => {
      throw new Error('boom');
    })(() => d);
    // Act
    const res = await invokeStreamed(handler, event(), context);
    // Assess
    expect(res.statusCode).toBe(500);
    expect(logs.join('\n')).toContain('request failed');
  });

  it('cuts the body short and logs when the source fails mid-body', async () => {
    // Prepare
    const { d, logs } = withLogs();
    async function* failing(): AsyncIterable<Uint8Array> {
      yield Buffer.from('first');
      throw new Error('store connection reset');
    }
    const handler = streamedHttpHandler(async () => ({ status: 200, headers: {}, body: failing() }))(() => d);
    // Act
    const outcome = await readStreamed(await invokeStreamingInProcess(handler, event(), context));
    if (!outcome.ok) throw new Error(outcome.reason);
    const read = bytesOf(outcome.body);
    // Assess
    await expect(read).rejects.toThrow();
    expect(outcome.reply.status).toBe(200);
    expect(await logged(logs, (l) => l.includes('"error"') && l.includes('streamed answer cut short'))).toBe(true);
  });

  it('logs a client that goes away as a warning, not an error', async () => {
    // Prepare
    const { d, logs } = withLogs();
    async function* endless(): AsyncIterable<Uint8Array> {
      for (;;) yield Buffer.alloc(64 * 1024);
    }
    const handler = streamedHttpHandler(async () => ({ status: 200, headers: {}, body: endless() }))(() => d);
    const outcome = await readStreamed(await invokeStreamingInProcess(handler, event(), context));
    if (!outcome.ok) throw new Error(outcome.reason);
    // Act: read one chunk, then stop reading.
    for await (const _chunk of outcome.body) break;
    // Assess
    expect(await logged(logs, (l) => l.includes('"warn"') && l.includes('the client went away'))).toBe(true);
    expect(logs.some((l) => l.includes('"error"'))).toBe(false);
  });
});

describe('reading a streamed answer', () => {
  const metadata = { statusCode: 206, headers: { 'content-range': 'bytes 0-3/10' }, cookies: ['a=b'] };

  it('finds the metadata and the body wherever the chunks split them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 8 }), async (body, cuts) => {
        // Prepare
        const raw = Buffer.concat([Buffer.from(JSON.stringify(metadata)), METADATA_DELIMITER, body]);
        const at = [...new Set(cuts.map((c) => c % (raw.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((start, i) => raw.subarray(start, [...at, raw.length][i]));
        // Act
        const outcome = await readStreamed(Readable.from(pieces.filter((p) => p.length > 0)));
        if (!outcome.ok) throw new Error(outcome.reason);
        const bytes = await bytesOf(outcome.body);
        // Assess
        expect(outcome.reply.status).toBe(206);
        expect(outcome.reply.headers).toEqual([
          ['content-range', 'bytes 0-3/10'],
          ['Set-Cookie', 'a=b'],
        ]);
        expect(bytes.equals(Buffer.from(body))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it.each([
    ['no delimiter', Buffer.from('{"statusCode":200}'), /ended before its metadata delimiter/],
    ['a buffered JSON answer', Buffer.from(JSON.stringify({ statusCode: 200, body: 'x' })), /ended before its metadata delimiter/],
    ['metadata that is not JSON', Buffer.concat([Buffer.from('nope'), METADATA_DELIMITER]), /not JSON/],
    ['a bad status', Buffer.concat([Buffer.from('{"statusCode":99}'), METADATA_DELIMITER]), /statusCode/],
    [
      'an unknown field',
      Buffer.concat([Buffer.from('{"statusCode":200,"body":"x"}'), METADATA_DELIMITER]),
      /unexpected metadata field\(s\) body/,
    ],
    ['an endless prelude', Buffer.alloc(70 * 1024, 0x20), /no metadata delimiter/],
  ])('refuses %s', async (_name, raw, reason) => {
    // Act
    const outcome = await readStreamed(Readable.from([raw]));
    // Assess
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? '' : outcome.reason).toMatch(reason);
  });

  it('gives a buffered invocation of a streaming handler no proxy result (API Gateway: 502)', async () => {
    // Prepare
    const { d } = withLogs();
    const handler: StreamingHandler = streamedHttpHandler(async () => ({ status: 200, headers: {}, body: chunks(Buffer.from('bytes')) }))(
      () => d,
    );
    // Act
    const payload = await invokeBufferedInProcess(handler, event(), context);
    // Assess
    expect(checkProxyResult(payload).ok).toBe(false);
  });
});
