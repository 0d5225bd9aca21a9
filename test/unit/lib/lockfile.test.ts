/**
 * `npm ci` installs exactly what package-lock.json lists and fails when a package's optional
 * platform build (the @swc/core, @unrs/resolver, esbuild binaries) is missing from it, which
 * many CI systems and every fresh clone hit. A lock written on one machine by an npm that
 * pruned the other platforms' entries fails here instead.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  os?: string[];
  cpu?: string[];
}
const lock = JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'package-lock.json'), 'utf8')) as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};

/** Where npm would look for `name` from the package at `from` (nearest node_modules first). */
function resolve(from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (candidate in lock.packages) return candidate;
    const at = dir.lastIndexOf('node_modules/');
    if (at < 0) return dir === '' ? undefined : resolve('', name);
    dir = dir.slice(0, Math.max(0, at - 1));
  }
}

describe('package-lock.json carries every platform build npm ci may need', () => {
  it('is a lockfile v3', () => {
    expect(lock.lockfileVersion).toBe(3);
  });

  it('lists every optional dependency of every locked package, whatever the platform', () => {
    const missing: string[] = [];
    for (const [at, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (resolve(at, name) === undefined) missing.push(`${at || '(root)'} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('includes the Linux x64 builds this project is tested and bundled on', () => {
    for (const name of ['@swc/core-linux-x64-gnu', '@esbuild/linux-x64', '@unrs/resolver-binding-linux-x64-gnu']) {
      expect(Object.keys(lock.packages).some((k) => k.endsWith(`node_modules/${name}`))).toBe(true);
    }
  });
});
