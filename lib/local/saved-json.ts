/**
 * State an emulation keeps across restarts in one JSON file of the data dir (secrets, KMS key
 * material): read whole at start (a missing or unreadable file is an empty store), written
 * whole through a rename with mode 0600, so a crash never leaves half a file and no other user
 * reads it.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/** The file's JSON, or undefined when it is missing or not JSON. */
export function readSavedJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export function writeSavedJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: 0o600 });
  renameSync(tmp, file);
}
