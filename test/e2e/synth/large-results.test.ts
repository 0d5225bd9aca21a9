/**
 * Results past Lambda's 6 MB response limit (test/e2e/large-results.test.ts) again, against
 * `npm run start:synth`: the methods stream as the template declares them (ResponseTransferMode
 * STREAM), and a buffered one would meet the function host's 6 MB payload limit.
 */
import { useE2eMode } from '../../support/runtime';
import '../large-results.test';

useE2eMode('synth');
