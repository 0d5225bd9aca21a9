/**
 * One runtime per data dir: a second start waits a moment for a holder on its way out, then
 * refuses with a message that names the folder and the way round it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir } from '../../lib/local/data-dir-lock';

describe('the data dir lock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second holder with a message naming the data dir and PIPEGATE_DATA_DIR', async () => {
    // Prepare
    const first = await lockDataDir(dir);
    try {
      // Act
      const second = lockDataDir(dir, 300);
      // Assess
      await expect(second).rejects.toBeInstanceOf(DataDirInUseError);
      await expect(lockDataDir(dir, 0)).rejects.toThrow(new RegExp(`${dir}.*in use by another pipegate.*PIPEGATE_DATA_DIR`));
    } finally {
      await first.release();
    }
  });

  it('goes to a second holder once the first lets go, within the wait', async () => {
    // Prepare
    const first = await lockDataDir(dir);
    // Act
    const second = lockDataDir(dir, 5_000);
    setTimeout(() => void first.release(), 300);
    // Assess
    const lock = await second;
    await lock.release();
  });
});
