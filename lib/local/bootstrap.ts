/**
 * What `npm start` (lib/local/runtime.ts) and `npm run start:synth` (lib/synth/runtime.ts)
 * do alike around the service they run: files kept in the data dir, the owner token, and
 * listening with the URL recorded for the CLI. Where functions, state machine and wiring come
 * from is each runtime's own.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { recordRuntimeUrl } from './runtime-url';

/** Reads a file of the data dir, creating it (mode 0600) on first use. */
export function persistent(path: string, create: () => string): string {
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return value;
}

/**
 * Starts a listener (`start(port)`, 0 for any free port) on the port recorded in `file` when
 * there is one and it is free, else on a free port, and records the port it got. The local S3
 * emulation listens this way: a presigned URL names its host and port, and SigV4 signs the
 * host, so URLs handed out before a restart keep working after it unless another process took
 * the port meanwhile.
 */
export async function onRecordedPort<T extends { url: string }>(file: string, start: (port: number) => Promise<T>): Promise<T> {
  const recorded = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : NaN;
  let started: T | undefined;
  if (Number.isInteger(recorded) && recorded > 0 && recorded < 65536) {
    try {
      started = await start(recorded);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EADDRINUSE') throw e;
    }
  }
  started ??= await start(0);
  const port = new URL(started.url).port;
  if (String(recorded) !== port) writeFileSync(file, `${port}\n`, { mode: 0o600 });
  return started;
}

/** The owner token: given, PIPEGATE_OWNER_TOKEN, or generated once into the data dir. */
export function ownerTokenOf(given: string | undefined, env: Record<string, string | undefined>, dataDir: string): string {
  return given ?? env.PIPEGATE_OWNER_TOKEN ?? persistent(join(dataDir, 'owner-token'), () => `pgo_${randomBytes(24).toString('base64url')}`);
}

/**
 * Listens on HOST/PORT (or the options'), and records the URL in the data dir where the CLI
 * looks for it. Returns the URL and how to remove the record.
 */
export async function listen(
  server: Server,
  opts: { host?: string; port?: number },
  env: Record<string, string | undefined>,
  dataDir: string,
): Promise<{ url: string; forgetUrl: () => void }> {
  const host = opts.host ?? env.HOST ?? '127.0.0.1';
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? Number(env.PORT ?? 3000), host, () => res());
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, forgetUrl: recordRuntimeUrl(dataDir, host, port, env.PIPEGATE_BASE_PATH) };
}

/** What a start-up sweep found and did, as both runtimes report it. */
export interface Recovered {
  resumed: number;
  rerun: number;
  interrupted: number;
  callbacks: number;
}

export const recoveredOf = (swept: { requeued: number; rerun: number; interrupted: number; callbacksRequeued: number }): Recovered => ({
  resumed: swept.requeued,
  rerun: swept.rerun,
  interrupted: swept.interrupted,
  callbacks: swept.callbacksRequeued,
});

/** The banner's line about it; null when there was nothing to recover. */
export function describeRecovered(r: Recovered): string | null {
  if (r.resumed + r.rerun + r.interrupted + r.callbacks === 0) return null;
  return `${r.resumed} queued, ${r.rerun} interrupted and running again, ${r.interrupted} interrupted (marked failed), ${r.callbacks} callbacks resumed`;
}
