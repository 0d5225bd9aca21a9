/** What every jest project of this repository shares (jest.config.js, jest.long.config.js). */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  rootDir: __dirname,
  roots: ['<rootDir>/test'],
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  // @middy/core, file-type (with its own dependencies) and eventsource-parser ship ESM only; let the transform
  // turn them into CommonJS.
  transformIgnorePatterns: [
    '/node_modules/(?!(@middy|file-type|strtok3|token-types|@tokenizer|@borewit|uint8array-extras|eventsource-parser)/)',
  ],
  setupFiles: ['<rootDir>/test/support/env.ts'],
};
