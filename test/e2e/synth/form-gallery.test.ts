/**
 * The web form of a map (test/e2e/form-gallery.test.ts) again, against `npm run start:synth`:
 * the form's functions from the synthesized bundles, the gallery's links minted by its role.
 */
import { useE2eMode } from '../../support/runtime';
import '../form-gallery.test';

useE2eMode('synth');
