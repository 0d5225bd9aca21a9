/**
 * Values larger than a DynamoDB item (test/e2e/large-values.test.ts) again, against
 * `npm run start:synth`: every function that writes or reads them does so under its own role.
 */
import { useE2eMode } from '../../support/runtime';
import '../large-values.test';

useE2eMode('synth');
