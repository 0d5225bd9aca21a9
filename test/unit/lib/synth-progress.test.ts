/** start:synth's first start says what it is doing: the synth's stages and the bundler's lines, timed. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BundleLines, EXPECTED_BUNDLES, synthesize } from '../../../lib/synth/assembly';
import { BUNDLE_LINE_PREFIX } from '../../../lib/stacks/bundler';
import { allFunctionNames } from '../../../lib/stacks/permissions';

describe('bundle progress', () => {
  it("relays the bundler's lines, also when a chunk splits one, and times the bundling they announce", () => {
    // Prepare
    const lines: string[] = [];
    let clock = 1000;
    const feed = new BundleLines(
      (l) => lines.push(l),
      () => clock,
    );
    // Act
    feed.feed(
      `npm warn something\nBundling asset Pipegate/Execute/Function/Code/Stage...\n${BUNDLE_LINE_PREFIX}service stack: 3 of 5 bund`,
    );
    feed.feed('les to build (2 unchanged, reused), about 4 s\n');
    clock = 3000;
    feed.feed(`${BUNDLE_LINE_PREFIX}built 2 of 3 in 2 s, about 1 s left\n`);
    clock = 4500;
    feed.feed(`${BUNDLE_LINE_PREFIX}built 3 of 3 in 4 s\n  ...index.js  319kb\n`);
    // Assess
    expect(lines).toEqual([
      'service stack: 3 of 5 bundles to build (2 unchanged, reused), about 4 s',
      'built 2 of 3 in 2 s, about 1 s left',
      'built 3 of 3 in 4 s',
    ]);
    expect(feed.bundleMs).toBe(3500);
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
        `process.stderr.write(${JSON.stringify(`${BUNDLE_LINE_PREFIX}service stack: 1 of 1 bundles to build\n`)}); process.exit(3);`,
      );
      const lines: string[] = [];
      await expect(synthesize(join(root, 'out'), { root, progress: (l) => lines.push(l) })).rejects.toThrow(/cdk synth failed/);
      expect(lines).toEqual(['service stack: 1 of 1 bundles to build']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
