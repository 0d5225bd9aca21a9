/**
 * What a restart of start:synth owes the work it finds unfinished: the stores and queues as the
 * functions see them, from this process, and the repair of what a kill can leave half-written.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDeps, type Deps } from '../../../functions/adapters/deps';
import { conditionalWrite, localEndpointConfig } from '../../../functions/adapters/dynamo';
import { sweepKey } from '../../../functions/adapters/executions.store';
import { createGuardedHttp } from '../../../functions/adapters/guarded-http';
import { parseKeyMaterial, StaticKeyMaterial } from '../../../functions/adapters/key-material';
import { silentLogger } from '../../../functions/adapters/logger';
import { createObjectStore } from '../../../functions/adapters/objects.store';
import { readConfig } from '../../config';
import { LocalQueuePort, type LocalQueue } from '../../local/queue';
import type { LocalWorkflows } from '../../local/workflow';
import type { LocalSecretStore } from '../aws-endpoint';
import type { FunctionHost } from '../function-host';
import type { ResolvedAssembly } from '../physical';

/**
 * The stores and queues as the functions see them (their environment names the table, the
 * queues and the secret), for the restart's recovery, which runs in this process.
 */
export function recoveryDeps(
  hosts: FunctionHost[],
  dynamoEndpoint: string,
  resolved: ResolvedAssembly,
  queues: ReadonlyMap<string, LocalQueue>,
  secrets: LocalSecretStore,
  workflow: LocalWorkflows,
  awsEndpoint: string,
): Deps {
  // A function's wiring whose secret is the whole key material (the authorizer's is the pepper alone).
  const whole = (arn: string | undefined) => secrets.find(arn ?? '')?.value.includes('"master_key"') === true;
  const fnEnv = hosts
    .map((h) => h.spec.env)
    .find((e) => e.PIPEGATE_TABLE && e.PIPEGATE_EXECUTIONS_QUEUE_URL && e.PIPEGATE_CALLBACKS_QUEUE_URL && whole(e.PIPEGATE_SECRET_ARN));
  if (!fnEnv) throw new Error('No function of the assembly names the table, both queues and the secret');
  const queue = (url: string | undefined): LocalQueue => {
    const q = queues.get(resolved.arns.queueArnOfUrl(url ?? '') ?? '');
    if (!q) throw new Error(`No local queue for ${String(url)}`);
    return q;
  };
  const secret = secrets.find(fnEnv.PIPEGATE_SECRET_ARN ?? '');
  if (!secret) throw new Error(`No secret ${String(fnEnv.PIPEGATE_SECRET_ARN)}`);
  const config = readConfig({ ...fnEnv, PIPEGATE_DYNAMODB_ENDPOINT: dynamoEndpoint, AWS_REGION: resolved.env.region });
  return createDeps(config, {
    queue: new LocalQueuePort({
      executions: queue(fnEnv.PIPEGATE_EXECUTIONS_QUEUE_URL),
      callbacks: queue(fnEnv.PIPEGATE_CALLBACKS_QUEUE_URL),
    }),
    workflow,
    keyMaterial: new StaticKeyMaterial(parseKeyMaterial(secret.value)),
    http: createGuardedHttp({ allowPrivate: false }),
    // The recovery does the sweeper's work, so it reaches the bucket as the sweeper does.
    objects: createObjectStore(
      { region: resolved.env.region, s3Endpoint: awsEndpoint, s3ForcePathStyle: true },
      config.bucket,
      sweeperCredentials(hosts),
    ),
    log: silentLogger,
  });
}

/** The credentials the sweeper function's sandbox holds (its role's). */
function sweeperCredentials(hosts: FunctionHost[]): { accessKeyId: string; secretAccessKey: string; sessionToken: string } {
  const env = hosts.find((h) => h.spec.env.AWS_LAMBDA_FUNCTION_NAME === h.spec.name && /sweeper/i.test(h.spec.name))?.spec.env;
  if (!env?.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY || !env.AWS_SESSION_TOKEN)
    throw new Error('No sweeper function in the assembly');
  return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN };
}

/**
 * Puts open executions that a kill left off the sweep index back on it (one Scan), and says how
 * many: the functions write as on AWS, moving the sweep marker in the status write itself, and
 * dynalite writes index entries before the item, so a process killed between the two can leave
 * an open execution off the index. Run by the bootstrap after an unclean stop only: a stop that
 * finished left every write whole. Local only: on AWS nothing restarts, and DynamoDB updates an
 * item and its index entries together.
 */
export async function indexUnmarkedOpen(d: Deps, dynamoEndpoint: string): Promise<number> {
  let indexed = 0;
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'local', ...localEndpointConfig(dynamoEndpoint) }));
  try {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await db.send(
        new ScanCommand({
          TableName: d.config.table,
          ProjectionExpression: 'pk, sk, created_at',
          FilterExpression: 'attribute_exists(execution_id) AND #s IN (:p, :r) AND attribute_not_exists(sweep)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':p': 'pending', ':r': 'running' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        indexed += 1;
        // An execution that finished meanwhile keeps no open entry (conditionalWrite: null).
        await conditionalWrite(
          db.send(
            new UpdateCommand({
              TableName: d.config.table,
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: 'SET sweep = :open, sweep_at = :at',
              ConditionExpression: '#s IN (:p, :r)',
              ExpressionAttributeNames: { '#s': 'status' },
              ExpressionAttributeValues: {
                ':open': sweepKey('open', String(item.pk).slice('EXEC#'.length)),
                ':at': item.created_at,
                ':p': 'pending',
                ':r': 'running',
              },
            }),
          ),
        );
      }
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    db.destroy();
  }
  return indexed;
}
