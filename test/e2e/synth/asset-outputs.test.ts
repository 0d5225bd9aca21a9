/**
 * The ASSET outputs suite (test/e2e/asset-outputs.test.ts) again, against `npm run start:synth`:
 * the synthesized bundles and the template's bucket, with IAM enforced (the result and owner
 * views read the key material to mint links; task-run writes binary answers).
 */
import { useE2eMode } from '../../support/runtime';
import '../asset-outputs.test';

useE2eMode('synth');
