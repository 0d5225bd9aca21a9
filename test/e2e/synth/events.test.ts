/**
 * The event stream suite (test/e2e/events.test.ts) again, against `npm run start:synth`: the
 * route streams because the template's integration says STREAM; the function runs in its own
 * worker under its role and learns of each write only by re-reading the record.
 */
import { useE2eMode } from '../../support/runtime';
import '../events.test';

useE2eMode('synth');
