/**
 * Reads the docs page's files from swagger-ui-dist: beside the bundle on AWS (the service
 * stack copies them there for this one function), from node_modules everywhere else. Read on
 * first use and kept, so a cold start that serves only the page never reads them.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DOCS_ASSETS, DOCS_ASSETS_DIR, DOCS_ASSETS_PACKAGE } from '../../lib/docs-assets';

const cache = new Map<string, Promise<string>>();

function assetsDir(): string {
  const bundled = join(__dirname, DOCS_ASSETS_DIR);
  if (existsSync(bundled)) return bundled;
  return dirname(require.resolve(`${DOCS_ASSETS_PACKAGE}/package.json`));
}

/** One of DOCS_ASSETS' files, or null for any other name (no path is ever built from a request). */
export function readDocsAsset(name: string): Promise<string> | null {
  if (!Object.hasOwn(DOCS_ASSETS, name)) return null;
  let text = cache.get(name);
  if (!text) {
    text = readFile(join(assetsDir(), name), 'utf8');
    text.catch(() => cache.delete(name));
    cache.set(name, text);
  }
  return text;
}
