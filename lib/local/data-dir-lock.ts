/**
 * One runtime per data dir, decided by an operating-system lock rather than a pid file: a
 * killed process stays a zombie for a moment (its pid still answers `kill(pid, 0)`), but the
 * kernel drops its file locks as soon as its descriptors close. LevelDB's LOCK file is such a
 * lock (fcntl), taken here on a tiny database of its own so it also guards an in-memory store.
 */
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';

export class DataDirInUseError extends Error {}

export interface DataDirLock {
  release(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** LevelDB reports a held lock as an IO error naming the LOCK file. */
const isHeld = (err: unknown): boolean => {
  const cause = (err as { cause?: { message?: unknown } }).cause;
  return /\bLOCK\b/.test(String(cause?.message ?? (err as Error).message ?? ''));
};

/**
 * Takes the data dir's lock, waiting up to `waitMs` for a holder that is on its way out (a
 * process still closing its files after a signal). Throws DataDirInUseError when a live
 * process keeps it.
 */
export async function lockDataDir(dataDir: string, waitMs = 5_000): Promise<DataDirLock> {
  const end = Date.now() + waitMs;
  for (;;) {
    const db = new ClassicLevel(join(dataDir, 'lock'));
    try {
      await db.open();
      return { release: () => db.close() };
    } catch (err) {
      // A holder closing its database at this very moment can make an open fail otherwise
      // (its files half-written): tried again like a held lock, and thrown as it is at the end.
      if (Date.now() >= end && !isHeld(err)) throw err;
      if (Date.now() >= end) {
        throw new DataDirInUseError(
          `The data dir ${dataDir} is in use by another pipegate. Stop it, or set PIPEGATE_DATA_DIR to another folder.`,
        );
      }
      await sleep(100);
    }
  }
}
