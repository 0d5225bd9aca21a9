/**
 * A kill -9 while an execution waits for an event (test/e2e/wait-restart.test.ts) again, against
 * `npm run start:synth`: the node records in the data dir's database, the recovery at the next
 * start, and a resume URL that still works.
 */
import { useE2eMode } from '../../support/runtime';
import '../wait-restart.test';

useE2eMode('synth');
