/** test/e2e/openapi-conformance.test.ts again, against `npm run start:synth`. */
import { useE2eMode } from '../../support/runtime';
import '../openapi-conformance.test';

useE2eMode('synth');
