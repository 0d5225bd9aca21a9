/** Long-running suites (reliability soak, fault injection); run with `npm run test:long`. */
const base = require('./jest.base.js');
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  testMatch: ['**/test/long/**/*.test.ts'],
  testTimeout: 600000,
  maxWorkers: 1,
};
