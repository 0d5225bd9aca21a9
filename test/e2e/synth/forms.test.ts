/**
 * The web-form suite (test/e2e/forms.test.ts) again, against `npm run start:synth`: the
 * synthesized bundles of the form's functions with IAM enforced (the link lookup and rate
 * counters, the key material, the execute path's writes and the result's links).
 */
import { useE2eMode } from '../../support/runtime';
import '../forms.test';

useE2eMode('synth');
