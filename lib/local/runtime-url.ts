/**
 * A running runtime (`npm start` or `npm run start:synth`) writes the URL it listens on into
 * its data dir, beside the owner token, so the CLI finds it on any PORT (lib/cli/connection.ts
 * reads the same file). Removed again when the runtime stops.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const RUNTIME_URL_FILE = 'runtime-url';

/** Records the URL a local client reaches the runtime at; returns how to remove it. */
export function recordRuntimeUrl(dataDir: string, host: string, port: number, basePath: string | undefined): () => void {
  const file = join(dataDir, RUNTIME_URL_FILE);
  const wildcard = host === '0.0.0.0' || host === '::';
  const reachable = wildcard ? `http://127.0.0.1:${port}` : `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const base = basePath ? `/${basePath.replace(/^\/+|\/+$/g, '')}` : '';
  writeFileSync(file, `${reachable}${base}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}
