import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { DeploymentsStore } from '../../functions/adapters/deployments.store';
import { ConsumersStore } from '../../functions/adapters/consumers.store';
import { executionStores, type ExecutionStores } from '../../functions/adapters/execution-stores';
import { StepsStore } from '../../functions/adapters/steps.store';
import { StaticKeyMaterial } from '../../functions/adapters/key-material';
import { KmsDataKeys } from '../../functions/adapters/kms';
import { OwnerSecretsStore } from '../../functions/adapters/owner-secrets.store';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import { UploadsStore } from '../../functions/adapters/uploads.store';
import { ensureTable, startDynalite, type LocalDynamo } from '../../lib/local/dynamo';
import { LocalKms, localKmsTransport } from '../../lib/local/kms';
import type { ObjectStorePort } from '../../functions/core/ports';

export const testKeyMaterial = new StaticKeyMaterial({ pepper: Buffer.from('test-pepper-0123456789'), masterKey: Buffer.alloc(32, 7) });

/** The ARN of the one key of testKms. */
export const TEST_KMS_KEY = 'arn:aws:kms:local:000000000000:key/00000000-0000-4000-8000-000000000001';
/** KMS as `npm start` emulates it, in memory, with one key. */
export const testKms = new LocalKms();
testKms.define(TEST_KMS_KEY);
/** Data keys for owner secrets, from testKms. */
export const testDataKeys = new KmsDataKeys(localKmsTransport(testKms), TEST_KMS_KEY);

export interface TestDb extends ExecutionStores {
  dynamo: LocalDynamo;
  table: string;
  /** The document client every store here sends through. */
  client: DynamoDBDocumentClient;
  pipelines: PipelinesStore;
  steps: StepsStore;
  deployments: DeploymentsStore;
  consumers: ConsumersStore;
  /** Read through no cache (TTL 0), so a test sees every write at once. */
  ownerSecrets: OwnerSecretsStore;
  uploads: UploadsStore;
  close(): Promise<void>;
}

/**
 * An in-memory dynalite with a fresh table, for one test file, reached as the local runtime
 * reaches it. `objects`: where the executions store keeps values too large for a record.
 */
export async function startTestDb(opts: { inProcess?: boolean; objects?: ObjectStorePort } = {}): Promise<TestDb> {
  const dynamo = await startDynalite({ inProcess: opts.inProcess ?? true });
  const table = `t-${randomUUID().slice(0, 8)}`;
  await ensureTable(dynamo.endpoint, table);
  const db = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
  return {
    dynamo,
    table,
    client: db,
    pipelines: new PipelinesStore(db, table),
    ...executionStores(db, table, {
      trackOpen: true,
      markerFollowUp: false,
      objects: opts.objects ? () => opts.objects as ObjectStorePort : undefined,
    }),
    steps: new StepsStore(db, table, () => {
      if (!opts.objects) throw new Error('this test database was started without object storage');
      return opts.objects;
    }),
    deployments: new DeploymentsStore(db, table),
    consumers: new ConsumersStore(db, table),
    ownerSecrets: new OwnerSecretsStore(db, table, testKeyMaterial, testDataKeys, 0),
    uploads: new UploadsStore(db, table),
    close: async () => {
      db.destroy();
      await dynamo.close();
    },
  };
}
