/**
 * Control flow (test/e2e/flow.test.ts) again, against `npm run start:synth`: the synthesized
 * assembly's bundles with IAM enforced, each map item a record of the steps table under the
 * task-run role, the state machine's Sleep between the items' polls.
 */
import { useE2eMode } from '../../support/runtime';
import '../flow.test';

useE2eMode('synth');
