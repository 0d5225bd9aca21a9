/**
 * Builds the CLI into one CommonJS bundle (dist/pipegate.js) with esbuild, and lists the
 * sources it was built from beside it (bin/cli-bundle.js uses the bundle only while none of
 * them is newer). Run by the `prepare` script, so `npm install` leaves `npx pipegate` starting
 * without compiling TypeScript each time.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { BUNDLE, DIST, INPUTS, ROOT, sha256 } = require('./cli-bundle.js') as {
  BUNDLE: string;
  DIST: string;
  INPUTS: string;
  ROOT: string;
  sha256(file: string): string;
};

export async function buildCli(dist: string = DIST): Promise<{ file: string; inputs: string[] }> {
  // Loaded here: an install without dev dependencies has no esbuild, and must still succeed.
  const { build } = await import('esbuild');
  mkdirSync(dist, { recursive: true });
  const file = join(dist, BUNDLE);
  const started = Date.now();
  const result = await build({
    entryPoints: [join(ROOT, 'bin', 'pipegate.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    // For node --enable-source-maps and debuggers: stack traces that name the TypeScript source.
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    // `pipegate mcp` loads the MCP SDK when it runs, from the installed package: bundled, its
    // 160 KB would be parsed on every command's start (+60 ms here) for the one that uses it.
    external: ['@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/*'],
    logLevel: 'warning',
  });
  // Sources of this repository only: node_modules changes through `npm install`, which rebuilds.
  const inputs = Object.keys(result.metafile.inputs)
    .map((p) => relative(ROOT, resolve(p)))
    .filter((p) => !p.startsWith('..') && !p.split(/[\\/]/).includes('node_modules'));
  // Written after the bundle, so the bundle is never newer than its list. A source modified
  // since the build started may not be what esbuild read: recorded as changed ('' matches no
  // content), so the CLI runs from the sources until the next build.
  const hashes = inputs.map((p) => {
    const file = join(ROOT, p);
    return [p, statSync(file).mtimeMs >= started - 100 ? '' : sha256(file)];
  });
  writeFileSync(join(dist, INPUTS), JSON.stringify(Object.fromEntries(hashes)));
  return { file, inputs };
}

if (require.main === module) {
  buildCli().then(
    ({ file, inputs }) => process.stdout.write(`built ${relative(ROOT, file)} from ${inputs.length} sources\n`),
    (e: unknown) => {
      process.stderr.write(`could not build the CLI bundle (npx pipegate still works, compiling on each start): ${String(e)}\n`);
      // Never fail `npm install` over it: the launcher falls back to the sources.
      process.exitCode = 0;
    },
  );
}
