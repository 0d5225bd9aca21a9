/**
 * Streamed integration answers, as API Gateway reads them from a method whose response transfer
 * mode is STREAM (Lambda's InvokeWithResponseStream): the HTTP metadata as JSON, eight NUL
 * bytes, then the body. The body is handed on as a stream that pulls from the function only as
 * fast as the client reads, so an answer is never held whole. Also the two ways Lambda invokes
 * an in-process function: streamed, and buffered (Invoke), for either kind of handler.
 */
import { PassThrough, Readable } from 'node:stream';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { isStreamingHandler, type StreamingHandler } from '../../../functions/adapters/lambda-streaming';
import { checkProxyResult } from './proxy-result';
import type { Reply } from './replies';

export const METADATA_DELIMITER = Buffer.alloc(8, 0);

/** How much may precede the delimiter (API Gateway documents no figure; metadata is headers, small). */
export const MAX_METADATA_BYTES = 64 * 1024;

export type BufferedHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
/** A function as the local runtime holds it in process: either kind of Lambda handler. */
export type LocalFunction = BufferedHandler | StreamingHandler;
/** InvokeWithResponseStream: the function's raw response bytes as they are produced. */
export type StreamInvoker = (event: APIGatewayProxyEvent, context: Context) => Promise<Readable>;

export type StreamedOutcome = { ok: true; reply: Reply; body: Readable } | { ok: false; reason: string };

/**
 * InvokeWithResponseStream of an in-process function. A streaming handler writes into the
 * stream; a buffered one's result arrives as one JSON chunk, as Lambda sends it (which API
 * Gateway then finds has no metadata).
 */
export async function invokeStreamingInProcess(fn: LocalFunction, event: APIGatewayProxyEvent, context: Context): Promise<Readable> {
  const stream = new PassThrough();
  const run = isStreamingHandler(fn)
    ? Promise.resolve().then(() => fn(event, stream, context))
    : Promise.resolve()
        .then(() => (fn as BufferedHandler)(event, context))
        .then((result) => {
          stream.write(JSON.stringify(result ?? null));
        });
  run.then(
    () => {
      if (!stream.writableEnded) stream.end();
    },
    (err: unknown) => stream.destroy(err instanceof Error ? err : new Error(String(err))),
  );
  return stream;
}

/**
 * Invoke (buffered) of an in-process function. A streaming handler's bytes become the payload,
 * as on Lambda: JSON if they parse, else the text, which is no proxy result (API Gateway: 502).
 */
export async function invokeBufferedInProcess(fn: LocalFunction, event: APIGatewayProxyEvent, context: Context): Promise<unknown> {
  if (!isStreamingHandler(fn)) return withinResponseLimit(await (fn as BufferedHandler)(event, context));
  const stream = await invokeStreamingInProcess(fn, event, context);
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(Buffer.from(chunk as Uint8Array));
  const text = Buffer.concat(parts).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Lambda's limit on a buffered (Invoke) response payload: 6 MB, the result as JSON. */
export const MAX_BUFFERED_RESPONSE_BYTES = 6 * 1024 * 1024;

/**
 * Lambda refuses a buffered result past its payload limit (Function.ResponseSizeTooLarge) and
 * API Gateway answers 502 with no word of why: so does the local gateway, so a route that
 * should stream fails here as it would there.
 */
function withinResponseLimit<T>(result: T): T {
  const bytes = Buffer.byteLength(JSON.stringify(result ?? null), 'utf8');
  if (bytes > MAX_BUFFERED_RESPONSE_BYTES) {
    throw Object.assign(
      new Error(
        `Function.ResponseSizeTooLarge: response payload size (${bytes} bytes) exceeded maximum allowed payload size (${MAX_BUFFERED_RESPONSE_BYTES} bytes)`,
      ),
      { gatewayStatus: 502 },
    );
  }
  return result;
}

/** Splits a streamed integration answer into its checked metadata and its body. */
export async function readStreamed(stream: Readable): Promise<StreamedOutcome> {
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  let head = Buffer.alloc(0);
  let at = -1;
  while (at === -1) {
    const next = await chunks.next();
    if (next.done) return { ok: false, reason: 'the stream ended before its metadata delimiter' };
    head = Buffer.concat([head, Buffer.from(next.value)]);
    at = head.indexOf(METADATA_DELIMITER);
    if (at === -1 && head.length > MAX_METADATA_BYTES) {
      stream.destroy();
      return { ok: false, reason: `no metadata delimiter in the first ${MAX_METADATA_BYTES} bytes` };
    }
  }
  let metadata: unknown;
  try {
    metadata = JSON.parse(head.subarray(0, at).toString('utf8'));
  } catch {
    stream.destroy();
    return { ok: false, reason: 'the metadata is not JSON' };
  }
  const { statusCode, headers, multiValueHeaders, cookies, ...extra } = (
    typeof metadata === 'object' && metadata !== null ? metadata : {}
  ) as Record<string, unknown>;
  const unexpected = Object.keys(extra);
  const checked =
    unexpected.length > 0
      ? ({ ok: false, reason: `unexpected metadata field(s) ${unexpected.join(', ')}` } as const)
      : checkProxyResult({
          statusCode,
          ...(headers === undefined ? {} : { headers }),
          ...(multiValueHeaders === undefined ? {} : { multiValueHeaders }),
        });
  if (!checked.ok) {
    stream.destroy();
    return { ok: false, reason: checked.reason };
  }
  const reply = checked.reply;
  if (Array.isArray(cookies)) for (const c of cookies) reply.headers.push(['Set-Cookie', String(c)]);
  const rest = head.subarray(at + METADATA_DELIMITER.length);
  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      if (rest.length > 0) yield rest;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    } finally {
      // The client went away (or the body ended): the function's stream stops being read.
      if (!stream.destroyed) stream.destroy();
    }
  }
  return { ok: true, reply, body: Readable.from(body(), { objectMode: false }) };
}
