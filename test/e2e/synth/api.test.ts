/**
 * The caller and owner suite (test/e2e/api.test.ts) again, against `npm run start:synth`: the
 * synthesized assembly's bundles, API, state machine and queues, with IAM enforced.
 */
import { useE2eMode } from '../../support/runtime';
import '../api.test';

useE2eMode('synth');
