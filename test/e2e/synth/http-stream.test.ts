/**
 * The big binary answer suite (test/e2e/http-stream.test.ts) again, against `npm run
 * start:synth`: the synthesized task-run bundle writes the answer in multipart parts to the
 * template's bucket, under an API execution and under an owner's run, each call checked against
 * its role (s3:PutObject on d/*\/e/* and p/*\/r/*, s3:AbortMultipartUpload on the same).
 */
import { useE2eMode } from '../../support/runtime';
import '../http-stream.test';

useE2eMode('synth');
