/**
 * Outbound HTTP for callbacks and http nodes, through the address guard. Names are resolved by
 * a lookup that checks every address before Node connects to one, so the check applies to the
 * address actually connected to and a name that re-binds to an internal address between check
 * and use cannot slip past.
 */
import * as dns from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkUrl, isBlockedAddress, isMetadataAddress } from '../core/address-guard';
import { isBinaryMediaType } from '../core/output-assets';
import type { HttpPort, HttpRequest, HttpResponse } from '../core/ports';

/** The form of `dns.lookup` the guard calls: always asking for every address of the name. */
export type LookupFn = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

export interface GuardedHttpOptions {
  /** Let loopback and private addresses through (the local runtime's default). */
  allowPrivate: boolean;
  /** Sent as User-Agent unless the request sets its own. */
  userAgent?: string;
  /** Name resolution; defaults to `dns.lookup`. */
  resolve?: LookupFn;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** A name resolved to an address the guard refuses; its message is meant for the user. */
export class AddressNotAllowedError extends Error {
  override readonly name = 'AddressNotAllowedError';
}

const defaultResolve: LookupFn = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * A drop-in for `dns.lookup` as `http.request({ lookup })` calls it (with `all` true or false).
 * It resolves every address of the name and fails if any of them is blocked, rather than
 * picking a good one, so that a name mixing public and internal answers is refused outright.
 */
export function guardedLookup(allowPrivate: boolean, resolve: LookupFn = defaultResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, options.all === true ? [] : '');
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        const notFound: NodeJS.ErrnoException = new Error(`host ${hostname} has no addresses`);
        notFound.code = 'ENOTFOUND';
        callback(notFound, options.all === true ? [] : '');
        return;
      }
      {
        const blocked = addresses.find((a) => (allowPrivate ? isMetadataAddress(a.address) : isBlockedAddress(a.address)));
        if (blocked !== undefined) {
          const refused = new AddressNotAllowedError(`address ${blocked.address} of host ${hostname} is not allowed`);
          callback(refused, options.all === true ? [] : '');
          return;
        }
      }
      if (options.all === true) {
        callback(null, addresses);
      } else {
        callback(null, first.address, first.family);
      }
    });
  };
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) {
    return undefined;
  }
  const { code } = err as { code?: unknown };
  if (typeof code === 'string') {
    return code;
  }
  // Node's happy-eyeballs connect reports an AggregateError of the per-address failures.
  const { errors } = err as { errors?: unknown };
  return Array.isArray(errors) ? errorCode(errors[0]) : undefined;
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

/** Turns a socket or protocol failure into a message for the user; never echoes the URL. */
function describeFailure(err: unknown, host: string, where: string): Error {
  if (err instanceof AddressNotAllowedError) {
    return new Error(err.message);
  }
  const code = errorCode(err);
  switch (code) {
    case 'ECONNREFUSED':
      return new Error(`connection refused by ${where}`);
    case 'ECONNRESET':
      return new Error(`connection reset by ${where}`);
    case 'ENOTFOUND':
      return new Error(`host ${host} not found`);
    case 'EAI_AGAIN':
      return new Error(`could not resolve host ${host}`);
    case 'ETIMEDOUT':
      return new Error(`connection to ${where} timed out`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new Error(`${where} is unreachable`);
    default:
      break;
  }
  if (code !== undefined && TLS_CODE.test(code)) {
    return new Error(`TLS failure with ${where}: ${code}`);
  }
  if (code !== undefined && code.startsWith('HPE_')) {
    return new Error(`invalid HTTP response from ${where}`);
  }
  return new Error(code === undefined ? `request to ${where} failed` : `request to ${where} failed: ${code}`);
}

function describeInvalidRequest(err: unknown): Error {
  const code = errorCode(err);
  if (code === 'ERR_INVALID_CHAR') {
    return new Error('invalid character in a request header');
  }
  if (code === 'ERR_INVALID_HTTP_TOKEN') {
    return new Error('invalid request method or header name');
  }
  return new Error('invalid request');
}

function flattenHeaders(distinct: NodeJS.Dict<string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, values] of Object.entries(distinct)) {
    if (values !== undefined) {
      out[name.toLowerCase()] = values.join(', ');
    }
  }
  return out;
}

function withUserAgent(headers: Record<string, string>, userAgent: string | undefined): Record<string, string> {
  if (userAgent === undefined || Object.keys(headers).some((h) => h.toLowerCase() === 'user-agent')) {
    return { ...headers };
  }
  return { ...headers, 'user-agent': userAgent };
}

/** A streamed body's Content-Length (a node's own header, if it set one, stands). */
function withLength(headers: Record<string, string>, body: HttpRequest['body']): Record<string, string> {
  if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) return headers;
  if (Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) return headers;
  return { ...headers, 'content-length': String(body.bytes) };
}

function exchange(opts: GuardedHttpOptions, lookup: LookupFunction, req: HttpRequest): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const refusal = checkUrl(req.url, { allowPrivate: opts.allowPrivate });
    if (refusal !== null) {
      reject(new Error(refusal));
      return;
    }
    if (req.signal?.aborted === true) {
      reject(new Error('aborted'));
      return;
    }
    const url = new URL(req.url);
    const secure = url.protocol === 'https:';
    // IP literals keep their brackets in URL.hostname; Node wants them bare. Node also skips
    // `lookup` for IP literals, which is why checkUrl above has already judged them.
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = url.port !== '' ? Number(url.port) : secure ? 443 : 80;
    const where = `${url.hostname}:${port}`;
    let maxBytes = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    let binary = false;

    let client: http.ClientRequest;
    try {
      client = (secure ? https : http).request({
        protocol: url.protocol,
        hostname: host,
        port,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: withLength(withUserAgent(req.headers, opts.userAgent), req.body),
        // A fresh socket per call, closed after the response: no pooled socket outlives the
        // exchange or keeps a Lambda or a test process alive.
        agent: false,
        lookup,
      });
    } catch (err) {
      reject(describeInvalidRequest(err));
      return;
    }

    let settled = false;
    // A streamed binary answer outlives the promise: its deadline, signal and socket are
    // released only when its body ends (`release`).
    let streaming = false;
    let released = false;
    let response: http.IncomingMessage | undefined;
    /** Errors this exchange made itself (time-out, abort, the limit): passed on as they are. */
    const own = new WeakSet<Error>();
    const release = (): void => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      if (response?.complete !== true) client.destroy();
    };
    const finish = (err: Error | null, res?: HttpResponse): void => {
      if (settled) {
        // While its body streams, a time-out or abort ends it with that error.
        if (streaming && err !== null && !released) {
          own.add(err);
          response?.destroy(err);
        }
        return;
      }
      settled = true;
      if (err !== null || res === undefined) {
        release();
        client.destroy();
        reject(err ?? new Error(`request to ${where} failed`));
        return;
      }
      if (!streaming) release();
      resolve(res);
    };
    const tooLarge = (): Error => new Error(`${binary ? 'binary response' : 'response'} larger than ${maxBytes} bytes`);
    // One deadline for the whole exchange (lookup, connect, headers and the full body), so a
    // receiver that drips its body slowly cannot hold the call open.
    const timer = setTimeout(() => finish(new Error(`timed out after ${req.timeoutMs} ms`)), req.timeoutMs);
    const onAbort = (): void => finish(new Error('aborted'));
    req.signal?.addEventListener('abort', onAbort, { once: true });

    client.on('error', (err) => finish(describeFailure(err, host, where)));
    client.on('response', (res) => {
      response = res;
      if (req.maxBinaryResponseBytes !== undefined && (req.bytesWhateverType === true || isBinaryMediaType(res.headers['content-type']))) {
        binary = true;
        maxBytes = req.maxBinaryResponseBytes;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        finish(tooLarge());
        return;
      }
      if (binary) {
        streaming = true;
        finish(null, { status: res.statusCode ?? 0, headers: flattenHeaders(res.headersDistinct), body: '', stream: streamBody(res) });
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          finish(tooLarge());
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        finish(null, {
          status: res.statusCode ?? 0,
          headers: flattenHeaders(res.headersDistinct),
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
      res.on('error', (err) => finish(describeFailure(err, host, where)));
      res.on('close', () => finish(new Error(`connection to ${where} closed before the response was complete`)));
    });

    /** The answer's bytes as they arrive, cut off past the binary limit. */
    function streamBody(res: http.IncomingMessage): AsyncIterable<Uint8Array> {
      const failure = (err: unknown): Error => (err instanceof Error && own.has(err) ? err : describeFailure(err, host, where));
      async function* chunks(): AsyncGenerator<Uint8Array> {
        let size = 0;
        try {
          for await (const chunk of res as AsyncIterable<Buffer>) {
            size += chunk.length;
            if (size > maxBytes) {
              const e = tooLarge();
              own.add(e);
              throw e;
            }
            yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
          }
          if (!res.complete) {
            const e = new Error(`connection to ${where} closed before the response was complete`);
            own.add(e);
            throw e;
          }
        } catch (err) {
          throw failure(err);
        } finally {
          release();
        }
      }
      return {
        [Symbol.asyncIterator]() {
          const inner = chunks();
          return {
            next: () => inner.next(),
            // Ending early (or before the first read, when a generator's finally would not run) closes the connection.
            return: async () => {
              release();
              await inner.return(undefined);
              return { done: true, value: undefined };
            },
          };
        },
      };
    }

    if (req.body !== undefined && typeof req.body !== 'string' && !(req.body instanceof Uint8Array)) {
      const sized = req.body;
      let sent = 0;
      const counted = async function* (): AsyncGenerator<Uint8Array> {
        for await (const chunk of sized.stream) {
          sent += chunk.length;
          if (sent > sized.bytes) throw new Error(`request body longer than its ${sized.bytes} bytes`);
          yield chunk;
        }
        if (sent !== sized.bytes) throw new Error(`request body of ${sent} bytes, not ${sized.bytes}`);
      };
      pipeline(Readable.from(counted()), client).catch((err: unknown) =>
        finish(err instanceof Error && err.message.startsWith('request body') ? err : describeFailure(err, host, where)),
      );
    } else {
      client.end(req.body);
    }
  });
}

/** The HttpPort every callback delivery and http node uses. */
export function createGuardedHttp(opts: GuardedHttpOptions): HttpPort {
  const lookup = guardedLookup(opts.allowPrivate, opts.resolve);
  return (req) => exchange(opts, lookup, req);
}
