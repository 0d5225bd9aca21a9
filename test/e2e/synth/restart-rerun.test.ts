/**
 * The crash-recovery suite (test/e2e/restart-rerun.test.ts) again, against `npm run start:synth`:
 * the re-run goes through the synthesized runner, state machine and task functions, with IAM
 * enforced on the conditional writes.
 */
import { useE2eMode } from '../../support/runtime';
import '../restart-rerun.test';

useE2eMode('synth');
