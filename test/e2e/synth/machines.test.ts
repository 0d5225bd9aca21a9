/**
 * Each execution on its state machine (test/e2e/machines.test.ts) again, against `npm run
 * start:synth`: the template's Express and Standard machines, the runner starting on each and
 * the owner cancel stopping a Standard execution under their roles, IAM enforced.
 */
import { useE2eMode } from '../../support/runtime';
import '../machines.test';

useE2eMode('synth');
