import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as v from 'valibot';
import { deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { CallbackMessage, dispatchCallback } from '../services/worker.service';

/**
 * Callbacks queue → one delivery attempt each. Retries are scheduled by re-queueing with a
 * delay (our own backoff schedule); a message fails back to the queue only when the
 * bookkeeping itself failed, and the queue's dead-letter queue catches poison messages.
 */
export const handler = middy<SQSEvent, SQSBatchResponse>().handler(async (event) => {
  const d = deps();
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      let msg: v.InferOutput<typeof CallbackMessage>;
      try {
        msg = v.parse(CallbackMessage, JSON.parse(record.body));
      } catch {
        d.log.error('dropping malformed callbacks message', { message_id: record.messageId });
        return;
      }
      try {
        await dispatchCallback(d, msg);
      } catch (e) {
        d.log.warn('callback dispatch failed; will retry', { execution_id: msg.execution_id, ...errorFields(e) });
        failures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures: failures };
});
