/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/test/long/'],
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  // @middy/core, file-type (with its own dependencies) and eventsource-parser ship ESM only; let the transform
  // turn them into CommonJS.
  transformIgnorePatterns: [
    '/node_modules/(?!(@middy|file-type|strtok3|token-types|@tokenizer|@borewit|uint8array-extras|eventsource-parser)/)',
  ],
  setupFiles: ['<rootDir>/test/support/env.ts'],
  // One synth per run, shared by every suite that needs the assembly.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
