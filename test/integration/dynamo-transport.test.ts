/**
 * The local runtime's functions reach dynalite in the process (lib/local/dynamo.ts
 * inProcessHandler) rather than over loopback HTTP. Both must look the same to the SDK: the
 * same results, and the same errors — class, name, message, fault and HTTP status — which the
 * stores branch on (a lost conditional write is how a transition loses a race).
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { ensureTable, startDynalite, type LocalDynamo } from '../../lib/local/dynamo';
import { greeting, startTestRuntime } from '../support/runtime';

let dynamo: LocalDynamo;
let inProcess: DynamoDBDocumentClient;
let loopback: DynamoDBDocumentClient;
const table = `t-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  dynamo = await startDynalite({ inProcess: true });
  await ensureTable(dynamo.endpoint, table);
  inProcess = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });
  // Built by hand, without the registered handler: the SDK's own HTTP handler over loopback.
  loopback = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: 'local',
      endpoint: dynamo.endpoint,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 3,
    }),
  );
});

afterAll(async () => {
  inProcess.destroy();
  loopback.destroy();
  await dynamo.close();
});

/** What a caller of the SDK can see of a failed call. */
async function failure(p: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await p;
  } catch (e) {
    const err = e as Error & { $fault?: string; $metadata?: { httpStatusCode?: number } };
    return {
      class: err.constructor.name,
      name: err.name,
      message: err.message,
      fault: err.$fault,
      status: err.$metadata?.httpStatusCode,
    };
  }
  throw new Error('the call succeeded');
}

/** Each failing call made once through each client; the answers must be equal and as DynamoDB's. */
async function both(call: (client: DynamoDBDocumentClient) => Promise<unknown>): Promise<Record<string, unknown>> {
  const a = await failure(call(inProcess));
  const b = await failure(call(loopback));
  expect(a).toEqual(b);
  return a;
}

describe('the in-process DynamoDB transport', () => {
  it('is what clients of this process use for the endpoint', async () => {
    const handler = await (inProcess.config.requestHandler as unknown as Promise<{ metadata?: { handlerProtocol?: string } }>);
    expect(handler.metadata?.handlerProtocol).toBe('in-process');
  });

  it('reads and writes the same store as loopback HTTP', async () => {
    const key = { pk: `K#${randomUUID()}`, sk: 'A' };
    await inProcess.send(new PutCommand({ TableName: table, Item: { ...key, n: 1, s: 'é ✓', list: [1, 'two', { three: true }] } }));
    const viaHttp = await loopback.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
    const viaProcess = await inProcess.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
    expect(viaProcess.Item).toEqual(viaHttp.Item);
    expect(viaProcess.Item).toEqual({ ...key, n: 1, s: 'é ✓', list: [1, 'two', { three: true }] });
    const updated = await inProcess.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        UpdateExpression: 'SET n = n + :one',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    expect(updated.Attributes?.n).toBe(2);
    const q = await inProcess.send(
      new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': key.pk } }),
    );
    expect(q.Items).toHaveLength(1);
  });

  it('fails a conditional write as loopback HTTP does', async () => {
    const key = { pk: `K#${randomUUID()}`, sk: 'A' };
    await inProcess.send(new PutCommand({ TableName: table, Item: key }));
    const err = await both((c) => c.send(new PutCommand({ TableName: table, Item: key, ConditionExpression: 'attribute_not_exists(pk)' })));
    expect(err).toMatchObject({
      class: 'ConditionalCheckFailedException',
      name: 'ConditionalCheckFailedException',
      fault: 'client',
      status: 400,
    });
  });

  it('refuses an invalid request as loopback HTTP does', async () => {
    const err = await both((c) =>
      c.send(new UpdateCommand({ TableName: table, Key: { pk: 'x', sk: 'y' }, UpdateExpression: 'SET n = :missing' })),
    );
    expect(err).toMatchObject({ name: 'ValidationException', fault: 'client', status: 400 });
    expect(String(err.message)).toMatch(/:missing/);
  });

  it('answers a missing table as loopback HTTP does', async () => {
    const err = await both((c) => c.send(new GetCommand({ TableName: `missing-${randomUUID().slice(0, 8)}`, Key: { pk: 'x', sk: 'y' } })));
    expect(err).toMatchObject({ class: 'ResourceNotFoundException', name: 'ResourceNotFoundException', fault: 'client', status: 400 });
  });
});

describe('the local runtime over loopback HTTP (PIPEGATE_DYNAMODB_TRANSPORT=http)', () => {
  it('runs an execution to the end', async () => {
    const rt = await startTestRuntime({ env: { PIPEGATE_DYNAMODB_TRANSPORT: 'http' } });
    try {
      expect(rt.deps.config.dynamodbTransport).toBe('http');
      const p = await rt.publishPipeline('greeting', greeting);
      const posted = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions`, p.apiKey, {});
      expect(posted.status).toBe(202);
      const done = await rt.waitForExecution(String(posted.body.execution_id), p.apiKey);
      expect(done.status).toBe('completed');
    } finally {
      await rt.cleanup();
    }
  });
});
