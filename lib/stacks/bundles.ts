/**
 * Every Lambda bundle the app makes, as data: one per function of the service (permissions.ts
 * lists them) and the stateful stack's and the service stack's custom-resource handlers. The
 * function construct takes its bundle from here by name, and the bundler (bundler.ts) builds a
 * stack's missing bundles together from this list. Plain data: no aws-cdk-lib.
 */
import * as path from 'node:path';
import { DOCS_ASSETS, DOCS_ASSETS_DIR, DOCS_ASSETS_PACKAGE } from '../docs-assets';
import { allFunctionNames, bundleExternals } from './permissions';

/** esbuild's target, kept in step with the functions' runtime (pipegate-function.ts RUNTIME). */
export const ESBUILD_TARGET = 'node24';

export interface BundleSpec {
  /** The module exporting `handler`, relative to the repository root. */
  entry: string;
  /** Packages left out of the bundle (see bundleExternals in permissions.ts). */
  external: readonly string[];
  /** Files copied beside the bundle, into `toDir` (the docs page's static files). */
  copyFiles?: { fromDir: string; files: readonly string[]; toDir: string };
  /**
   * The stack whose functions are bundled together: the first of them to be bundled builds every
   * missing bundle of its stack at once (shared parsing, one esbuild run per group), and a synth
   * of the other stack alone builds none of them.
   */
  stack: 'stateful' | 'service';
}

/** The function whose bundle carries the docs page's Swagger UI files. */
export const DOCS_FUNCTION = 'deployment-docs';

const docsFiles = (): BundleSpec['copyFiles'] => ({
  fromDir: path.dirname(require.resolve(`${DOCS_ASSETS_PACKAGE}/package.json`)),
  files: Object.keys(DOCS_ASSETS),
  toDir: DOCS_ASSETS_DIR,
});

export function bundleSpecs(): Readonly<Record<string, BundleSpec>> {
  const specs: Record<string, BundleSpec> = {
    'secret-init': { entry: 'lib/stacks/secret-init.handler.ts', external: [], stack: 'stateful' },
  };
  for (const name of allFunctionNames()) {
    specs[name] = {
      entry: path.join('functions', name, 'handler.ts'),
      external: bundleExternals(name),
      stack: 'service',
      // The docs page's Swagger UI files travel beside this one function's bundle, read from
      // disk when asked for: no other bundle carries them, and its cold start does not parse them.
      ...(name === DOCS_FUNCTION ? { copyFiles: docsFiles() } : {}),
    };
  }
  specs['upload-cors'] = { entry: 'lib/stacks/upload-cors.handler.ts', external: [], stack: 'service' };
  specs['concurrency-check'] = { entry: 'lib/stacks/concurrency-check.handler.ts', external: [], stack: 'service' };
  return specs;
}

export function bundleSpec(name: string): BundleSpec {
  const spec = bundleSpecs()[name];
  if (!spec) throw new Error(`No bundle "${name}" in lib/stacks/bundles.ts`);
  return spec;
}
