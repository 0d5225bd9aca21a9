/**
 * Two projects, so that only the suites that serve or read the synthesized cloud assembly pay
 * for the synth (a cold one takes minutes here): `synthesized` (test/synth, test/e2e/synth)
 * has the global setup that builds the assembly once per run, or finds it in .tmp/synth;
 * `sources` (every other suite) runs without it, so a unit test after an edit in functions/
 * starts in seconds. `npx jest test/unit/core/engine.test.ts` runs one file of `sources`;
 * `npx jest --selectProjects synthesized` the synthesized suites alone.
 */
const base = require('./jest.base.js');

/** Suites that read or serve the synthesized assembly. */
const SYNTHESIZED = ['<rootDir>/test/synth/', '<rootDir>/test/e2e/synth/'];

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      ...base,
      displayName: 'sources',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/test/long/', ...SYNTHESIZED],
    },
    {
      ...base,
      displayName: 'synthesized',
      testMatch: SYNTHESIZED.map((dir) => `${dir}**/*.test.ts`),
      testPathIgnorePatterns: ['/node_modules/'],
      // One synth per run, shared by every suite of this project (only when one of them runs).
      globalSetup: '<rootDir>/test/support/global-setup.ts',
    },
  ],
  // A limit only a hang reaches (test/support/hang.ts): the machine may be loaded many times
  // over, and a test that waits for its condition takes what it takes.
  testTimeout: 300_000,
  maxWorkers: 2,
};
