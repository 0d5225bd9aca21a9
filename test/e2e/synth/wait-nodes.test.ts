/**
 * Wait nodes (test/e2e/wait-nodes.test.ts) again, against `npm run start:synth`: the synthesized
 * assembly's bundles with IAM enforced (the resume function's grants: the key material, the
 * node's item, the wake's message and StopExecution), the state machine's Sleep while it waits.
 */
import { useE2eMode } from '../../support/runtime';
import '../wait-nodes.test';

useE2eMode('synth');
