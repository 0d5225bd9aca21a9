/**
 * The owner's lists (ExecutionListsPort): a pipeline's runs (index gsi1) and a deployment's
 * API executions (the keys-only `executions` index, then each item's summary), a page at a
 * time with opaque cursors. Reads only.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { EXECUTION_SUMMARY_FIELDS, type ExecutionListsPort, type ExecutionSummaryRecord } from '../core/ports';
import type { ExecutionStatus } from '../core/transitions';
import type { Execution } from '../core/types';
import { decodeCursor, encodeCursor, summaryOf, SUMMARY_CLAIM_FIELDS, type ExecutionItems } from './execution-items';

export class ExecutionListsStore implements ExecutionListsPort {
  constructor(private readonly items: ExecutionItems) {}

  /** A pipeline's runs, newest first, a page at a time. */
  async listRuns(pipelineId: string, opts: { limit: number; cursor?: string }): Promise<{ runs: Execution[]; next: string | null }> {
    const out = await this.items.db.send(
      new QueryCommand({
        TableName: this.items.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': `RUNS#${pipelineId}` },
        ScanIndexForward: false,
        Limit: opts.limit,
        ExclusiveStartKey: decodeCursor(opts.cursor, `RUNS#${pipelineId}`),
      }),
    );
    // A page shows each run's values only where its record holds them: one with values in
    // storage would cost a GET per run (up to 100 a page, each up to MBs), so they stay unread
    // (unread_values) but for an error message, which the list's rows show.
    return {
      runs: await Promise.all((out.Items ?? []).map((i) => this.items.resolve(i, null, SUMMARY_CLAIM_FIELDS))),
      next: encodeCursor(out.LastEvaluatedKey),
    };
  }

  /**
   * A deployment's API executions, newest first, from the keys-only `executions` index; the
   * items themselves are then read (the index holds no attributes, so status updates never
   * write it). With a status filter, keys are read until `limit` match or 5 × limit were
   * looked at, so one request stays bounded; `next` continues from there.
   */
  async listByDeployment(
    deploymentId: string,
    opts: { limit: number; since?: string; status?: ExecutionStatus; cursor?: string; now: Date },
  ): Promise<{ executions: ExecutionSummaryRecord[]; next: string | null }> {
    const partition = `EXECS#${deploymentId}`;
    const found: ExecutionSummaryRecord[] = [];
    let start = decodeCursor(opts.cursor, partition, 'dep_pk');
    let looked = 0;
    const budget = opts.status ? opts.limit * 5 : opts.limit;
    do {
      const out = await this.items.db.send(
        new QueryCommand({
          TableName: this.items.table,
          IndexName: 'executions',
          KeyConditionExpression: opts.since ? 'dep_pk = :p AND dep_sk >= :since' : 'dep_pk = :p',
          ExpressionAttributeValues: { ':p': partition, ...(opts.since ? { ':since': opts.since } : {}) },
          ScanIndexForward: false,
          Limit: opts.limit,
          ExclusiveStartKey: start,
        }),
      );
      const items = out.Items ?? [];
      // A summary shows the error message of the values: a page of 100 must not read 100 items
      // of 400 KB each, nor their outputs moved to storage.
      const fetched = await Promise.all(
        items.map(async (k) => {
          const e = await this.items.getProjected(
            String(k.pk).slice('EXEC#'.length),
            opts.now,
            false,
            EXECUTION_SUMMARY_FIELDS,
            SUMMARY_CLAIM_FIELDS,
          );
          return e === null ? null : summaryOf(e);
        }),
      );
      start = out.LastEvaluatedKey;
      for (let i = 0; i < items.length; i++) {
        looked++;
        const e = fetched[i];
        if (!e || (opts.status && e.status !== opts.status)) continue;
        found.push(e);
        const k = items[i];
        if (found.length === opts.limit) {
          // Continue right after this one, so the cursor never skips a match.
          if (k && i < items.length - 1) start = { pk: k.pk, sk: k.sk, dep_pk: k.dep_pk, dep_sk: k.dep_sk };
          return { executions: found, next: encodeCursor(start) };
        }
      }
    } while (start && looked < budget);
    return { executions: found, next: encodeCursor(start) };
  }
}
