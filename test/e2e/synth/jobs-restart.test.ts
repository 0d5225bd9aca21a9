/**
 * A kill -9 in the middle of a job or a long delay (test/e2e/jobs-restart.test.ts) again,
 * against `npm run start:synth`: the node records in the data dir's database, the recovery at
 * the next start, and the same one submit.
 */
import { useE2eMode } from '../../support/runtime';
import '../jobs-restart.test';

useE2eMode('synth');
