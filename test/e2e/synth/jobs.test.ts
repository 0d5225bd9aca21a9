/**
 * Jobs by poll (test/e2e/jobs.test.ts) again, against `npm run start:synth`: the synthesized
 * assembly's bundles with IAM enforced, the state machine's Sleep between polls, the sweeper
 * reading the pipeline's own time-out under its role.
 */
import { useE2eMode } from '../../support/runtime';
import '../jobs.test';

useE2eMode('synth');
