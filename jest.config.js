/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/test/long/'],
  transform: {
    '^.+\\.(t|j|mj)s$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  // @middy/core ships ESM only; let the transform turn it into CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(@middy)/)'],
  setupFiles: ['<rootDir>/test/support/env.ts'],
  // One synth per run, shared by every suite that needs the assembly.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
