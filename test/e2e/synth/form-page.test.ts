/**
 * The web form in a browser (test/e2e/form-page.test.ts) again, against `npm run start:synth`:
 * the page, its files and its routes from the synthesized bundles, with IAM enforced.
 */
import { useE2eMode } from '../../support/runtime';
import '../form-page.test';

useE2eMode('synth');
