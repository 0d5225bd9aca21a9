/**
 * A kill -9 in the middle of a map (test/e2e/flow-restart.test.ts) again, against `npm run
 * start:synth`: the items' records in the data dir's database, the recovery at the next start,
 * each item submitted once.
 */
import { useE2eMode } from '../../support/runtime';
import '../flow-restart.test';

useE2eMode('synth');
