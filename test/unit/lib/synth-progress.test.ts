/** start:synth's first start says what it is doing: the synth's stages and each bundle, counted. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleProgress, EXPECTED_BUNDLES, synthesize } from '../../../lib/synth/assembly';
import { allFunctionNames } from '../../../lib/stacks/permissions';

describe('bundle progress', () => {
  it('counts the CDK\'s "Bundling asset" lines, also when a chunk splits one', () => {
    const lines: string[] = [];
    const feed = bundleProgress((l) => lines.push(l), 3);
    feed('npm warn something\nBundling asset Pipegate/Execute/Function/Code/Sta');
    feed('ge...\n  ...index.js  319kb\nBundling asset Pipegate/RunList/Function/Code/Stage...\n');
    feed('Bundling asset PipegateStateful/SecretInit/Function/Code/Stage...\nBundling asset Pipegate/Extra/Function/Code/Stage...\n');
    expect(lines).toEqual([
      'bundling 1 of 3: Pipegate/Execute',
      'bundling 2 of 3: Pipegate/RunList',
      'bundling 3 of 3: PipegateStateful/SecretInit',
      'bundling 4: Pipegate/Extra',
    ]);
  });

  it('expects one bundle per function of the service, the secret initializer and the upload CORS and concurrency check resources', () => {
    expect(EXPECTED_BUNDLES).toBe(allFunctionNames().length + 3);
  });

  it('reports them while the CDK CLI runs the app', async () => {
    // A stand-in app: prints what the CDK prints while bundling, then fails.
    const root = mkdtempSync(join(tmpdir(), 'pipegate-synth-progress-'));
    try {
      writeFileSync(join(root, 'cdk.json'), JSON.stringify({ app: `${JSON.stringify(process.execPath)} app.js` }));
      writeFileSync(
        join(root, 'app.js'),
        "process.stderr.write('Bundling asset Pipegate/Execute/Function/Code/Stage...\\n'); process.exit(3);",
      );
      const lines: string[] = [];
      await expect(synthesize(join(root, 'out'), { root, progress: (l) => lines.push(l) })).rejects.toThrow(/cdk synth failed/);
      expect(lines).toEqual([`bundling 1 of ${EXPECTED_BUNDLES}: Pipegate/Execute`]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
