/**
 * The kill -9 suite (test/e2e/restart.test.ts) again, against `npm run start:synth`: queues on
 * disk, the data dir's database and secrets, and the recovery at the next start.
 */
import { useE2eMode } from '../../support/runtime';
import '../restart.test';

useE2eMode('synth');
