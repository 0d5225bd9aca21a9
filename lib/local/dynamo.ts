/**
 * DynamoDB on one machine: dynalite (LevelDB on disk, or in memory for tests) with the table
 * built from the same definition as the cloud (lib/tables.ts).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  ResourceInUseException,
  ScanCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { MAIN_TABLE, type TableDefinition } from '../tables';

export interface LocalDynamo {
  endpoint: string;
  close(): Promise<void>;
}

/** Starts dynalite on 127.0.0.1 (port 0 = any free port); `path` persists it on disk. */
export async function startDynalite(opts: { path?: string; port?: number } = {}): Promise<LocalDynamo> {
  const server: Server = dynalite({ path: opts.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** Creates the table unless it exists, then waits until it is active. */
export async function ensureTable(endpoint: string, tableName: string, def: TableDefinition = MAIN_TABLE): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const create = () => {
    const attrs = new Set([def.partitionKey, def.sortKey, ...def.indexes.flatMap((i) => [i.partitionKey, i.sortKey])]);
    return client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attrs].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
        KeySchema: [
          { AttributeName: def.partitionKey, KeyType: 'HASH' },
          { AttributeName: def.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: def.indexes.map((i) => ({
          IndexName: i.name,
          KeySchema: [
            { AttributeName: i.partitionKey, KeyType: 'HASH' },
            { AttributeName: i.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: i.projection },
        })),
      }),
    );
  };
  try {
    await create();
  } catch (e) {
    if (!(e instanceof ResourceInUseException)) throw e;
    await rebuildIfIndexMissing(client, tableName, def, create);
  }
  await waitActive(client, tableName);
  client.destroy();
}

async function waitActive(client: DynamoDBClient, tableName: string): Promise<void> {
  // dynalite does not implement TTL (UpdateTimeToLive); expiry is checked at read time instead.
  for (let i = 0; i < 100; i++) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A data dir made before the definition gained an index has a table without it, and dynalite
 * cannot add one in place (UpdateTable ignores index creation). The table is rebuilt: every
 * item read, the table created anew from the definition, the items written back, which fills
 * the new index. Local data only; AWS adds an index in place (CloudFormation).
 */
async function rebuildIfIndexMissing(client: DynamoDBClient, tableName: string, def: TableDefinition, create: () => Promise<unknown>): Promise<void> {
  const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const have = new Set((out.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  if (def.indexes.every((i) => have.has(i.name))) return;
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start, ConsistentRead: true }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  await client.send(new DeleteTableCommand({ TableName: tableName }));
  for (let i = 0; i < 100; i++) {
    try {
      await create();
      break;
    } catch (e) {
      // dynalite deletes asynchronously even with deleteTableMs 0.
      if (!(e instanceof ResourceInUseException)) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  await waitActive(client, tableName);
  for (const item of items) await client.send(new PutItemCommand({ TableName: tableName, Item: item }));
}
