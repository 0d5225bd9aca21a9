/**
 * The example media pipeline as a web form (test/e2e/form-thumbnail.test.ts) again, against
 * `npm run start:synth`: published with the CLI, used in Chromium, with IAM enforced.
 */
import { useE2eMode } from '../../support/runtime';
import '../form-thumbnail.test';

useE2eMode('synth');
