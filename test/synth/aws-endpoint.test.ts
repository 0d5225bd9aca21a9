import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetAccountSettingsCommand, GetFunctionConcurrencyCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SFN_MAX_ATTEMPTS, SfnWorkflowPort } from '../../functions/adapters/sfn.workflow';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { ensureTable, startDynalite, type LocalDynamo } from '../../lib/local/dynamo';
import { LocalQueue } from '../../lib/local/queue';
import {
  LocalSecretStore,
  startAwsEndpoint,
  updatedAttributes,
  type AwsEndpoint,
  type AwsServices,
  type StateMachinePort,
} from '../../lib/synth/aws-endpoint';
import { credentialsFor, IamEvaluator } from '../../lib/synth/iam';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { StartExecutionThrottle } from '../../lib/synth/scale-model';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { functionRoleArn, localEnv, logicalId, queueArn, tableArn } from './synth-helpers';

/** A state machine that runs nothing: records starts and stops, stays open until stopped. */
class RecordingMachine implements StateMachinePort {
  readonly started: { name: string; input: Record<string, unknown> }[] = [];
  readonly stopped: string[] = [];
  private readonly open = new Set<string>();
  constructor(readonly type: 'STANDARD' | 'EXPRESS') {}
  async start(name: string, input: Record<string, unknown>) {
    this.started.push({ name, input });
    this.open.add(name);
  }
  async stop(name: string) {
    this.stopped.push(name);
    this.open.delete(name);
  }
  running() {
    return [...this.open];
  }
}

const errorName = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'no error',
    (e: unknown) => (e instanceof Error ? e.name : String(e)),
  );

describe('the local AWS endpoint', () => {
  let dir: string;
  let dynamo: LocalDynamo;
  let endpoint: AwsEndpoint;
  let resolved: ResolvedAssembly;
  let table: string;
  let executions: LocalQueue;
  let machineArn: string;
  let expressArn: string;
  const standard = new RecordingMachine('STANDARD');
  const express = new RecordingMachine('EXPRESS');
  let services: AwsServices;
  let secretArn: string;
  let pepperArn: string;
  let bucket: string;

  beforeAll(async () => {
    const assembly = await testAssembly();
    dir = mkdtempSync(path.join(tmpdir(), 'pipegate-endpoint-'));
    dynamo = await startDynalite();
    endpoint = await startAwsEndpoint({ log: () => undefined });
    resolved = resolveAssembly(assembly, localEnv(endpoint.url));
    const stateful = resolved.stack('PipegateStateful');
    table = stateful.physical[logicalId(resolved, 'PipegateStateful', 'AWS::DynamoDB::Table', 'Table')]?.ref ?? '';
    await ensureTable(dynamo.endpoint, table);
    executions = new LocalQueue({ dir, name: 'executions', visibilityTimeoutSeconds: 30, maxReceiveCount: 5, batchSize: 10 });
    const machineOf = (id: string) =>
      resolved.stack('Pipegate').physical[logicalId(resolved, 'Pipegate', 'AWS::StepFunctions::StateMachine', id)]?.ref ?? '';
    machineArn = machineOf('StandardStateMachine');
    expressArn = machineOf('ExpressStateMachine');
    secretArn = stateful.physical[logicalId(resolved, 'PipegateStateful', 'AWS::SecretsManager::Secret', 'KeyMaterial')]?.ref ?? '';
    pepperArn = stateful.physical[logicalId(resolved, 'PipegateStateful', 'AWS::SecretsManager::Secret', 'KeyPepper')]?.ref ?? '';
    bucket = stateful.physical[logicalId(resolved, 'PipegateStateful', 'AWS::S3::Bucket', 'Objects')]?.ref ?? '';
    const secrets = new LocalSecretStore(path.join(dir, 'secrets.json'));
    secrets.define(secretArn, () => '{"pepper":"p"}');
    secrets.define(pepperArn, () => '{"pepper":"q"}');
    services = {
      iam: IamEvaluator.fromAssembly(resolved),
      arns: resolved.arns,
      dynamoEndpoint: dynamo.endpoint,
      queues: new Map([[queueArn(resolved, 'Executions'), executions]]),
      stateMachines: new Map<string, StateMachinePort>([
        [machineArn, standard],
        [expressArn, express],
      ]),
      secrets,
      objects: { dir: path.join(dir, 'objects'), buckets: [bucket] },
    };
    endpoint.serve(services);
  }, SYNTH_TIMEOUT_MS);

  afterAll(async () => {
    await endpoint?.stop();
    await dynamo?.close();
    await executions?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** SDK clients signed as the role of one pipegate function. */
  const as = (fn: string) => {
    const config = { endpoint: endpoint.url, region: 'us-east-1', credentials: credentialsFor(functionRoleArn(resolved, fn), fn) };
    return {
      doc: DynamoDBDocumentClient.from(new DynamoDBClient(config)),
      sqs: new SQSClient(config),
      sfn: new SFNClient(config),
      secrets: new SecretsManagerClient(config),
    };
  };

  it('forwards allowed DynamoDB calls and refuses others with AccessDeniedException, recording each denial', async () => {
    // Prepare
    const execute = as('execute').doc;
    const item = { pk: 'EXEC#e1', sk: 'EXEC', status: 'pending' };
    const before = endpoint.denials.length;
    // Act
    await execute.send(new PutCommand({ TableName: table, Item: item }));
    const read = await execute.send(new GetCommand({ TableName: table, Key: { pk: 'EXEC#e1', sk: 'EXEC' } }));
    const refused = await errorName(as('execution-status').doc.send(new PutCommand({ TableName: table, Item: item })));
    // Assess
    expect(read.Item).toEqual(item);
    expect(refused).toBe('AccessDeniedException');
    expect(endpoint.denials.slice(before)).toEqual([
      expect.objectContaining({
        action: 'dynamodb:PutItem',
        resource: tableArn(resolved),
        principal: expect.stringMatching(
          /^arn:aws:sts::123456789012:assumed-role\/Pipegate-ExecutionStatusRole[0-9A-F]+\/execution-status$/,
        ),
      }),
    ]);
  });

  it("lets the authorizer record a consumer's last use and change nothing else of a deployment's items", async () => {
    // Prepare
    const authorizer = as('authorizer').doc;
    const Key = { pk: 'DEPLOYMENT#d1', sk: 'CONSUMER#c1' };
    await as('deployment-consumers').doc.send(new PutCommand({ TableName: table, Item: { ...Key, status: 'active' } }));
    const update = (expression: string, more: Record<string, unknown> = {}) =>
      errorName(
        authorizer.send(
          new UpdateCommand({
            TableName: table,
            Key,
            UpdateExpression: expression,
            ExpressionAttributeValues: { ':v': 'x' },
            ConditionExpression: 'attribute_exists(pk)',
            ...more,
          }),
        ),
      );
    // Act
    const touched = await update('SET last_used_at = :v');
    const revoked = await update('SET #s = :v', { ExpressionAttributeNames: { '#s': 'status' } });
    const both = await update('SET last_used_at = :v, scope = :v');
    const returned = await update('SET last_used_at = :v', { ReturnValues: 'ALL_OLD' });
    // Assess
    expect(touched).toBe('no error');
    expect(revoked).toBe('AccessDeniedException');
    expect(both).toBe('AccessDeniedException');
    expect(returned).toBe('AccessDeniedException');
    expect((await as('deployment-consumers').doc.send(new GetCommand({ TableName: table, Key }))).Item).toEqual({
      ...Key,
      status: 'active',
      last_used_at: 'x',
    });
  });

  it('reads the attributes an update changes as DynamoDB names them to IAM', () => {
    expect(updatedAttributes('SET a = :x, #b.c[0] = if_not_exists(d, :y) REMOVE e, f.g ADD n :one DELETE s :set', { '#b': 'bee' })).toEqual(
      ['a', 'bee', 'e', 'f', 'n', 's'],
    );
  });

  it('authorizes a Query on an index against the index ARN', async () => {
    // Prepare
    const query = new QueryCommand({
      TableName: table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'PIPELINES' },
    });
    // Act
    const allowed = await as('pipeline-list').doc.send(query);
    const refused = await errorName(as('execution-status').doc.send(query));
    // Assess
    expect(allowed.Items).toEqual([]);
    expect(refused).toBe('AccessDeniedException');
    expect(endpoint.denials.at(-1)).toMatchObject({ action: 'dynamodb:Query', resource: `${tableArn(resolved)}/index/gsi1` });
  });

  it('puts allowed SQS messages on the local queue, delay included, and refuses others as SQS does', async () => {
    // Prepare
    const url = resolved.arns.queueUrl(queueArn(resolved, 'Executions').split(':').pop() ?? '');
    // Act
    const sent = await as('execute').sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: '{"a":1}', DelaySeconds: 5 }));
    const batch = await as('run-start').sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'x', MessageBody: 'one' },
          { Id: 'y', MessageBody: 'two', DelaySeconds: 901 },
        ],
      }),
    );
    const refused = await errorName(as('execution-status').sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' })));
    // Assess
    expect(sent.MessageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(batch.Successful?.map((s) => s.Id)).toEqual(['x']);
    expect(batch.Failed).toEqual([expect.objectContaining({ Id: 'y', Code: 'InvalidParameterValue', SenderFault: true })]);
    expect(await executions.depth()).toEqual({ visible: 1, inFlight: 0, delayed: 1 });
    expect(refused).toBe('AccessDenied');
    expect(endpoint.denials.at(-1)).toMatchObject({ action: 'sqs:SendMessage', resource: queueArn(resolved, 'Executions') });
  });

  it('keeps Step Functions name idempotency for Standard machines, through the real workflow adapter', async () => {
    // Prepare
    const machines = { express: expressArn, standard: machineArn };
    const runner = new SfnWorkflowPort(as('runner').sfn, machines);
    const cancel = new SfnWorkflowPort(as('execution-cancel').sfn, machines);
    // Act / Assess
    expect(await runner.start('standard', 'run-1', { execution_id: 'run-1' })).toBe('started');
    expect(await runner.start('standard', 'run-1', { execution_id: 'run-1' })).toBe('started');
    expect(await runner.start('standard', 'run-1', { execution_id: 'other' })).toBe('already_exists');
    expect(standard.started).toEqual([{ name: 'run-1', input: { execution_id: 'run-1' } }]);
    await cancel.stop('standard', 'run-1', 'cancelled');
    expect(standard.stopped).toEqual(['run-1']);
    // Closed: the same name and input is now a reuse too.
    expect(await runner.start('standard', 'run-1', { execution_id: 'run-1' })).toBe('already_exists');
    await cancel.stop('standard', 'never-started', 'x');
    expect(
      await errorName(as('execute').sfn.send(new StartExecutionCommand({ stateMachineArn: machineArn, name: 'n', input: '{}' }))),
    ).toBe('AccessDeniedException');
    expect(endpoint.denials.at(-1)).toMatchObject({ action: 'states:StartExecution', resource: machineArn });
    expect(await errorName(as('runner').sfn.send(new DescribeExecutionCommand({ executionArn: `${machineArn}:x` })))).toBe(
      'UnknownOperationException',
    );
  });

  it('starts every Express execution anew, with an express: ARN, and stops none', async () => {
    // Prepare: the template's Express machine.
    const runner = as('runner').sfn;
    const start = new StartExecutionCommand({ stateMachineArn: expressArn, name: 'e-1', input: '{"execution_id":"e-1"}' });
    try {
      // Act
      const first = await runner.send(start);
      const second = await runner.send(start);
      await new SfnWorkflowPort(as('execution-cancel').sfn, { express: expressArn, standard: machineArn }).stop(
        'express',
        'e-1',
        'cancelled',
      );
      const direct = await errorName(as('execution-cancel').sfn.send(new StopExecutionCommand({ executionArn: first.executionArn })));
      // Assess
      expect(first.executionArn).toMatch(
        new RegExp(`^arn:aws:states:us-east-1:123456789012:express:${expressArn.split(':').pop()}:e-1:[0-9a-f-]{36}$`),
      );
      expect(second.executionArn).not.toBe(first.executionArn);
      expect(express.started.map((s) => s.name)).toEqual(['e-1', 'e-1']);
      expect(express.stopped).toEqual([]);
      expect(direct).toBe('InvalidArn');
    } finally {
      endpoint.serve(services);
    }
  });

  it("answers a StartExecution past the scale model's throttle with ThrottlingException, which the SDK retries as a throttle", async () => {
    // Prepare: Express at 1/6000 of its quota: one start banked, one more a second.
    const throttle = new StartExecutionThrottle(1 / 6000, { lambda: {}, stage: {}, dynamo: {}, states: {} });
    endpoint.serve({ ...services, startThrottle: throttle });
    const config = {
      endpoint: endpoint.url,
      region: 'us-east-1',
      credentials: credentialsFor(functionRoleArn(resolved, 'runner'), 'runner'),
    };
    const start = new StartExecutionCommand({ stateMachineArn: expressArn, name: 't-1', input: '{"execution_id":"t-1"}' });
    try {
      // Act
      await new SFNClient({ ...config, maxAttempts: 1 }).send(start);
      const refused = await new SFNClient({ ...config, maxAttempts: 1 })
        .send(start)
        .catch((e: unknown) => e as { name: string; $retryable?: { throttling?: boolean } });
      // The runner's own client: its retries wait for the bucket to refill.
      const retried = await new SFNClient({ ...config, maxAttempts: SFN_MAX_ATTEMPTS }).send(start);
      // Assess
      expect(refused).toMatchObject({ name: 'ThrottlingException', message: 'Rate exceeded' });
      expect(retried.$metadata.attempts).toBeGreaterThan(1);
      expect(throttle.limits.find((l) => l.name === 'StartExecution EXPRESS rate')?.scaled).toBe(1);
    } finally {
      endpoint.serve(services);
    }
  });

  it('serves the key-material secret to the roles granted it, the pepper alone to the authorizer, and nothing else of Secrets Manager', async () => {
    // Act
    const got = await as('execute').secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
    const pepper = await as('authorizer').secrets.send(new GetSecretValueCommand({ SecretId: pepperArn }));
    const notTheMaterial = await errorName(as('authorizer').secrets.send(new GetSecretValueCommand({ SecretId: secretArn })));
    const refused = await errorName(as('execution-cancel').secrets.send(new GetSecretValueCommand({ SecretId: secretArn })));
    const put = await errorName(as('authorizer').secrets.send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: '{}' })));
    const describe = await errorName(as('authorizer').secrets.send(new DescribeSecretCommand({ SecretId: secretArn })));
    // Assess
    expect(got).toMatchObject({ ARN: secretArn, SecretString: '{"pepper":"p"}' });
    expect(pepper).toMatchObject({ ARN: pepperArn, SecretString: '{"pepper":"q"}' });
    expect(notTheMaterial).toBe('AccessDeniedException');
    expect(refused).toBe('AccessDeniedException');
    expect(put).toBe('AccessDeniedException');
    expect(describe).toBe('UnknownOperationException');
  });

  it("answers Lambda's GetAccountSettings from the emulated account to the concurrency check's role alone", async () => {
    // Prepare: an account of 10 units, as new accounts start.
    const lambda = (fn: string) =>
      new LambdaClient({ endpoint: endpoint.url, region: 'us-east-1', credentials: credentialsFor(functionRoleArn(resolved, fn), fn) });
    endpoint.serve({ ...services, lambdaAccount: () => ({ quota: 10, unreserved: 9 }) });
    try {
      // Act
      const got = await lambda('concurrency-check').send(new GetAccountSettingsCommand({}));
      const refused = await errorName(lambda('execute').send(new GetAccountSettingsCommand({})));
      const unknown = await errorName(lambda('concurrency-check').send(new GetFunctionConcurrencyCommand({ FunctionName: 'x' })));
      // Assess
      expect(got.AccountLimit).toMatchObject({ ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 9 });
      expect(refused).toBe('AccessDeniedException');
      expect(unknown).toBe('UnknownOperationException');
      expect(endpoint.denials.at(-1)).toMatchObject({ action: 'lambda:GetAccountSettings', resource: '*' });
    } finally {
      endpoint.serve(services);
    }
  });

  it('refuses a key that names no role of the templates', async () => {
    // Prepare
    const stranger = new DynamoDBClient({
      endpoint: endpoint.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'x' },
    });
    // Act / Assess
    expect(
      await errorName(DynamoDBDocumentClient.from(stranger).send(new GetCommand({ TableName: table, Key: { pk: 'a', sk: 'b' } }))),
    ).toBe('UnrecognizedClientException');
  });

  describe('S3, with the IAM of each role', () => {
    const D = '0b5c7a4e-8a43-4d7c-9a57-1f6f4f0f4f10';
    const E = '5a1c2a9e-2b43-4c7c-8a57-2f6f4f0f4f20';
    /** The adapter as a function's sandbox builds it (start:synth sets the endpoint and path-style). */
    const objects = (fn: string) =>
      createObjectStore(
        { region: 'us-east-1', s3Endpoint: endpoint.url, s3ForcePathStyle: true },
        bucket,
        credentialsFor(functionRoleArn(resolved, fn), fn),
      );
    const key = `d/${D}/e/${E}/out.photo`;

    it('lets a function granted the bucket write, head and read objects, and answers a missing key 404', async () => {
      // Act
      await objects('task-run').put(key, Uint8Array.from([1, 2, 3]), 'image/png');
      // Assess
      expect(await objects('task-run').head(key)).toEqual({ bytes: 3, media_type: 'image/png' });
      expect(await objects('task-run').read(key)).toEqual(Uint8Array.from([1, 2, 3]));
      expect(await objects('execute').head(`d/${D}/e/${E}/none`)).toBeNull();
    });

    it('lets a writer write in parts and abort (PutObject, AbortMultipartUpload), and refuses one without the grant', async () => {
      // Prepare
      const big = `d/${D}/e/${E}/node.parts`;
      const before = endpoint.denials.length;
      // Act
      const done = await objects('task-run').begin?.(big, 'video/mp4');
      await done?.part(new Uint8Array(5 * 1024 * 1024).fill(1));
      await done?.part(Uint8Array.from([2, 3]));
      await done?.complete();
      const dropped = await objects('task-run').begin?.(`d/${D}/e/${E}/node.dropped`, 'video/mp4');
      await dropped?.part(Uint8Array.from([4]));
      await dropped?.abort();
      const refused = await errorName(objects('deployment-contract').begin?.(`d/${D}/e/${E}/node.x`, 'video/mp4') ?? Promise.resolve());
      // Assess
      expect(await objects('task-run').head(big)).toEqual({ bytes: 5 * 1024 * 1024 + 2, media_type: 'video/mp4' });
      expect(await objects('task-run').head(`d/${D}/e/${E}/node.dropped`)).toBeNull();
      expect(refused).toBe('AccessDenied');
      expect(endpoint.denials.slice(before).map((d) => [d.action, d.resource])).toEqual([
        ['s3:PutObject', `arn:aws:s3:::${bucket}/d/${D}/e/${E}/node.x`],
      ]);
      await objects('sweeper').remove([big]);
    });

    it('refuses a function without the grant with AccessDenied, recording the object ARN', async () => {
      // Prepare
      const before = endpoint.denials.length;
      // Act
      const put = await errorName(objects('deployment-contract').put(`d/${D}/e/${E}/x`, Uint8Array.from([1]), 'text/plain'));
      const read = await errorName(objects('deployment-contract').read(key));
      const remove = await errorName(objects('task-run').remove([key, `d/${D}/e/${E}/other`]));
      // Assess
      expect(put).toBe('AccessDenied');
      expect(read).toBe('AccessDenied');
      expect(remove).toBe('Error');
      expect(endpoint.denials.slice(before).map((d) => [d.action, d.resource])).toEqual([
        ['s3:PutObject', `arn:aws:s3:::${bucket}/d/${D}/e/${E}/x`],
        ['s3:GetObject', `arn:aws:s3:::${bucket}/${key}`],
        ['s3:DeleteObject', `arn:aws:s3:::${bucket}/${key}`],
        ['s3:DeleteObject', `arn:aws:s3:::${bucket}/d/${D}/e/${E}/other`],
      ]);
      expect(await objects('task-run').head(key)).not.toBeNull();
    });

    it('lets only the deleting functions remove a prefix', async () => {
      // Act
      const removed = await objects('sweeper').removePrefix(`d/${D}/`);
      // Assess
      expect(removed).toBe(1);
      expect(await objects('task-run').head(key)).toBeNull();
      expect(await errorName(objects('deployment-contract').removePrefix(`d/${D}/`))).toBe('AccessDenied');
    });

    // Each function that writes objects writes its own key families (functions/core/object-keys.ts) and no other.
    const P = 'photo-7';
    const families = {
      callerExecution: `d/${D}/e/${E}/val.node`,
      ownerRun: `p/${P}/r/${E}/val.node`,
      callerUpload: `d/${D}/u/${E}`,
      ownerUpload: `p/${P}/u/${E}`,
    };
    it.each([
      ['execute', ['callerExecution']],
      ['form-execute', ['callerExecution']],
      ['run-start', ['ownerRun']],
      ['task-run', ['callerExecution', 'ownerRun']],
    ] as const)('lets %s put objects under %j and refuses it every other key family with AccessDenied', async (fn, own) => {
      // Act
      const outcomes: Record<string, string> = {};
      for (const [family, key] of Object.entries(families)) {
        outcomes[family] = await errorName(objects(fn).put(key, Uint8Array.from([1]), 'application/json'));
      }
      // Assess
      expect(outcomes).toEqual(
        Object.fromEntries(Object.keys(families).map((f) => [f, (own as readonly string[]).includes(f) ? 'no error' : 'AccessDenied'])),
      );
      await objects('sweeper').remove(own.map((f) => families[f]));
    });

    it('lets task-run stream in parts and abort under both execution families, and nowhere else; the functions that only put may not abort', async () => {
      // Prepare
      const streamed = async (fn: string, key: string): Promise<string> => {
        const upload = await objects(fn).begin?.(key, 'image/png');
        await upload?.part(Uint8Array.from([1, 2]));
        await upload?.complete();
        return (await objects('task-run').head(key))?.bytes === 2 ? 'stored' : 'missing';
      };
      const aborted = async (fn: string, key: string): Promise<string> => {
        const upload = await objects(fn).begin?.(key, 'image/png');
        await upload?.part(Uint8Array.from([3]));
        return errorName(upload?.abort() ?? Promise.reject(new Error('no multipart')));
      };
      const parts = { callerExecution: `d/${D}/e/${E}/out.parts`, ownerRun: `p/${P}/r/${E}/out.parts` };
      // Act
      const streams = {
        callerExecution: await streamed('task-run', parts.callerExecution),
        ownerRun: await streamed('task-run', parts.ownerRun),
        callerUpload: await errorName(streamed('task-run', families.callerUpload)),
        ownerUpload: await errorName(streamed('task-run', families.ownerUpload)),
      };
      const aborts = {
        taskRunCallerExecution: await aborted('task-run', `d/${D}/e/${E}/out.dropped`),
        taskRunOwnerRun: await aborted('task-run', `p/${P}/r/${E}/out.dropped`),
        execute: await aborted('execute', `d/${D}/e/${E}/in.dropped`),
        runStart: await aborted('run-start', `p/${P}/r/${E}/in.dropped`),
      };
      // Assess
      expect(streams).toEqual({ callerExecution: 'stored', ownerRun: 'stored', callerUpload: 'AccessDenied', ownerUpload: 'AccessDenied' });
      expect(aborts).toEqual({
        taskRunCallerExecution: 'no error',
        taskRunOwnerRun: 'no error',
        execute: 'AccessDenied',
        runStart: 'AccessDenied',
      });
      await objects('sweeper').remove(Object.values(parts));
    });

    it("authorizes a presigned URL at use time against its signer's role", async () => {
      // Prepare
      const granted = await objects('upload-create').presignUpload(`d/${D}/u/${E}`, 'image/png', 2, 60);
      const refused = await objects('deployment-contract').presignUpload(`d/${D}/u/${D}`, 'image/png', 2, 60);
      const link = await objects('deployment-contract').presignDownload(`d/${D}/u/${E}`, 'image/png', 60, false);
      // Act
      const ok = await fetch(granted.url, { method: 'PUT', body: Uint8Array.from([7, 8]), headers: { 'Content-Type': 'image/png' } });
      const no = await fetch(refused.url, { method: 'PUT', body: Uint8Array.from([7, 8]), headers: { 'Content-Type': 'image/png' } });
      const get = await fetch(link.url);
      // Assess
      expect(ok.status).toBe(200);
      expect(no.status).toBe(403);
      expect(await no.text()).toContain('<Code>AccessDenied</Code>');
      expect(get.status).toBe(403);
      expect(await objects('execute').read(`d/${D}/u/${E}`)).toEqual(Uint8Array.from([7, 8]));
      expect(new URL(granted.url).pathname).toBe(`/${bucket}/d/${D}/u/${E}`);
    });
  });
});
