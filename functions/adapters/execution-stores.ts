/**
 * The stores of the execution items, built together over one ExecutionItems (one client, one
 * table, the same sweep and claim-check settings): each serves one concern of the same item.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeliveriesStore } from './deliveries.store';
import { ExecutionItems, type ExecutionItemsOptions } from './execution-items';
import { ExecutionListsStore } from './execution-lists.store';
import { ExecutionsStore } from './executions.store';
import { IdempotencyStore } from './idempotency.store';
import { SweepStore } from './sweep.store';
import { UsageStore } from './usage.store';

export interface ExecutionStores {
  executions: ExecutionsStore;
  deliveries: DeliveriesStore;
  sweep: SweepStore;
  executionLists: ExecutionListsStore;
  usage: UsageStore;
  idempotency: IdempotencyStore;
}

export function executionStores(db: DynamoDBDocumentClient, table: string, opts: ExecutionItemsOptions = {}): ExecutionStores {
  const items = new ExecutionItems(db, table, opts);
  return {
    executions: new ExecutionsStore(items),
    deliveries: new DeliveriesStore(items),
    sweep: new SweepStore(items),
    executionLists: new ExecutionListsStore(items),
    usage: new UsageStore(db, table),
    idempotency: new IdempotencyStore(db, table),
  };
}
