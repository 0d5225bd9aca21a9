/**
 * The form's event stream (test/e2e/form-events.test.ts) again, against `npm run start:synth`:
 * the synthesized form-events function behind the template's streaming integration, its SDK
 * calls checked against its own role (the link lookup, the rate counters, the record's reads,
 * the key material for the result's links).
 */
import { useE2eMode } from '../../support/runtime';
import '../form-events.test';

useE2eMode('synth');
