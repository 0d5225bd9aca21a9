/**
 * The request-edges suite (test/e2e/request-edges.test.ts) again, against `npm run start:synth`:
 * the synthesized bundles answer the same, and the same server and gateway read the requests.
 */
import { useE2eMode } from '../../support/runtime';
import '../request-edges.test';

useE2eMode('synth');
