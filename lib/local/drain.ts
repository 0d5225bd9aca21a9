/**
 * An early answer to a request whose body is still arriving (the gateway's 413 before it reads
 * an oversized body, the S3 emulation's 403 to a PUT it refuses on its headers): a server that
 * answers and closes with the client's bytes unread sends a reset, which on the client's side
 * empties the socket's buffer, the answer with it, unless the client has read it already (a 5 MB
 * body sent without `Expect: 100-continue` got the reset 7 times in 10 in a fuzz of the running
 * service, and every time from a client that sends its whole body before it reads). So the rest
 * is read and dropped first, up to a bound, and the answer follows; a body declared past the
 * bound, or one that stops arriving, is not waited for.
 */
import type { IncomingMessage } from 'node:http';

/** The most of a refused body read and dropped before the answer (API Gateway's own ceiling is 10 MB). */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** How long a body may pause before the answer is sent without the rest. */
export const DRAIN_IDLE_MS = 5_000;

/**
 * Reads and drops whatever of the body is still to come. Resolves true once it has all been
 * read (the connection may then be kept), false when the body is declared or runs past `limit`,
 * pauses for `idleMs`, or the client goes away (answer with `Connection: close`).
 */
export function drainRest(req: IncomingMessage, limit = DRAIN_LIMIT_BYTES, idleMs = DRAIN_IDLE_MS): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  if (req.destroyed || Number(req.headers['content-length'] ?? 0) > limit) {
    req.pause();
    return Promise.resolve(false);
  }
  return new Promise((resolve) => {
    let seen = 0;
    let idle: NodeJS.Timeout | undefined;
    const finish = (drained: boolean): void => {
      clearTimeout(idle);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      if (!drained) req.pause();
      resolve(drained);
    };
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => finish(false), idleMs);
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > limit) finish(false);
      else arm();
    };
    const onEnd = (): void => finish(true);
    const onClose = (): void => finish(req.complete);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    arm();
    req.resume();
  });
}
