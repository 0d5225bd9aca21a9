/**
 * The consumers suite (test/e2e/consumers.test.ts) again, against `npm run start:synth`: consumer
 * keys, revocation, expiry, rotation, the rate limit and the exact quota with the synthesized
 * bundles and every SDK call checked against its function's IAM role.
 */
import { useE2eMode } from '../../support/runtime';
import '../consumers.test';

useE2eMode('synth');
