import { randomUUID } from 'node:crypto';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { DeploymentsStore } from '../../functions/adapters/deployments.store';
import { ExecutionsStore } from '../../functions/adapters/executions.store';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import { ensureTable, startDynalite, type LocalDynamo } from '../../lib/local/dynamo';

export interface TestDb {
  dynamo: LocalDynamo;
  table: string;
  pipelines: PipelinesStore;
  executions: ExecutionsStore;
  deployments: DeploymentsStore;
  close(): Promise<void>;
}

/** An in-memory dynalite with a fresh table, for one test file. */
export async function startTestDb(): Promise<TestDb> {
  const dynamo = await startDynalite();
  const table = `t-${randomUUID().slice(0, 8)}`;
  await ensureTable(dynamo.endpoint, table);
  const db = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
  return {
    dynamo,
    table,
    pipelines: new PipelinesStore(db, table),
    executions: new ExecutionsStore(db, table),
    deployments: new DeploymentsStore(db, table),
    close: async () => {
      db.destroy();
      await dynamo.close();
    },
  };
}
