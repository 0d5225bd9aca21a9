declare module 'dynalite' {
  import type { Server } from 'node:http';
  interface DynaliteOptions {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    ssl?: boolean;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}

/**
 * dynalite's store and its key and index functions, for writing a large history straight into
 * a data dir (bench/retained.ts) the way its PutItem would.
 */
declare module 'dynalite/db' {
  import type { AttributeValue } from '@aws-sdk/client-dynamodb';
  type Item = Record<string, AttributeValue>;
  type Callback<T = void> = (err: Error | null | undefined, value?: T) => void;
  export interface TableDescription {
    TableName: string;
    KeySchema: { AttributeName: string; KeyType: string }[];
    GlobalSecondaryIndexes?: unknown[];
  }
  export interface BatchOp {
    type: 'put';
    key: string;
    value: Item;
  }
  interface SubDb {
    batch(ops: BatchOp[], cb: Callback): void;
  }
  export interface DynaliteStore {
    db: { close(cb: Callback): void };
    getTable(name: string, cb: Callback<TableDescription>): void;
    getItemDb(table: string): SubDb;
    getIndexDb(kind: 'Global' | 'Local', table: string, index: string): SubDb;
  }
  export function create(options: { path?: string }): DynaliteStore;
  /** An item's size as dynalite's PutItem and UpdateItem weigh it against maxItemSizeKb. */
  export function itemSize(item: Item): number;
  export function createKey(item: Item, table: TableDescription): string;
  export function getIndexActions(
    indexes: unknown[],
    existing: Item | null,
    item: Item,
    table: TableDescription,
  ): { puts: { index: string; key: string; item: Item }[]; deletes: { index: string; key: string }[] };
}
