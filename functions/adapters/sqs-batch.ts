import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as v from 'valibot';
import type { Deps, DepsSource } from './deps';
import { errorFields } from './logger';

/**
 * An SQS consumer: each record's body is checked against `schema`, records are handled
 * concurrently, and only the ones whose work threw are reported back (ReportBatchItemFailures),
 * so one bad record does not redeliver the whole batch. A malformed body is dropped and logged:
 * retrying it could never succeed.
 */
export function sqsBatchHandler<S extends v.GenericSchema<unknown, { execution_id: string }>>(
  queue: string,
  schema: S,
  work: (d: Deps, msg: v.InferOutput<S>, record: SQSRecord) => Promise<unknown>,
) {
  return (deps: DepsSource) =>
    middy<SQSEvent, SQSBatchResponse>().handler(async (event) => {
      const d = deps();
      const failures: SQSBatchResponse['batchItemFailures'] = [];
      await Promise.all(
        event.Records.map(async (record) => {
          let msg: v.InferOutput<S>;
          try {
            msg = v.parse(schema, JSON.parse(record.body));
          } catch {
            d.log.error(`dropping malformed ${queue} message`, { message_id: record.messageId });
            return;
          }
          try {
            await work(d, msg, record);
          } catch (e) {
            d.log.warn(`${queue} message failed; it will be retried`, { execution_id: msg.execution_id, ...errorFields(e) });
            failures.push({ itemIdentifier: record.messageId });
          }
        }),
      );
      return { batchItemFailures: failures };
    });
}
