import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as v from 'valibot';
import { deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { ExecutionMessage, startWorkflow } from '../services/worker.service';

/**
 * Executions queue → one state-machine execution per pipegate execution. Duplicates are
 * harmless: only a pending execution is started, and the start task moves it on only once.
 * Failures are reported per message so one bad record does not redeliver the whole batch.
 */
export const handler = middy<SQSEvent, SQSBatchResponse>().handler(async (event) => {
  const d = deps();
  const failures: SQSBatchResponse['batchItemFailures'] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      let msg: v.InferOutput<typeof ExecutionMessage>;
      try {
        msg = v.parse(ExecutionMessage, JSON.parse(record.body));
      } catch {
        d.log.error('dropping malformed executions message', { message_id: record.messageId });
        return;
      }
      try {
        await startWorkflow(d, msg.execution_id);
      } catch (e) {
        d.log.warn('could not start workflow; will retry', { execution_id: msg.execution_id, ...errorFields(e) });
        failures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures: failures };
});
