/**
 * The sweeper's role in the synthesized templates against what a sweeper pass really calls:
 * one pass that makes every kind of repair runs over dynalite with its DynamoDB commands and
 * queue sends recorded, each call is put to the role as AWS would authorize it, and every
 * other call a pipegate function makes is refused to it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { executionStores } from '../../functions/adapters/execution-stores';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import type { QueuePort } from '../../functions/core/ports';
import type { Execution } from '../../functions/core/types';
import { newDelivery } from '../../functions/services/delivery';
import { sweepOnce } from '../../functions/services/sweeper.service';
import { IamEvaluator } from '../../lib/synth/iam';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution, testConfig, testDeps } from '../support/fakes';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { functionRoleArn, localEnv, logicalId, queueArn, tableArn } from './synth-helpers';

const DYNAMO_ACTIONS: Record<string, string> = {
  GetCommand: 'GetItem',
  PutCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  QueryCommand: 'Query',
  ScanCommand: 'Scan',
  BatchGetCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
};

interface Call {
  action: string;
  resource: string;
}

describe("the sweeper's role", () => {
  let resolved: ResolvedAssembly;
  let iam: IamEvaluator;
  let db: TestDb;
  let client: DynamoDBDocumentClient;
  const calls: Call[] = [];
  let table: string;
  let queues: Record<'executions' | 'callbacks', string>;

  beforeAll(async () => {
    resolved = resolveAssembly(await testAssembly(), localEnv());
    iam = IamEvaluator.fromAssembly(resolved);
    table = tableArn(resolved);
    queues = { executions: queueArn(resolved, 'Executions'), callbacks: queueArn(resolved, 'Callbacks') };
    db = await startTestDb();
    client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const send = client.send.bind(client) as (c: unknown) => Promise<unknown>;
    (client as unknown as { send: (c: unknown) => Promise<unknown> }).send = (c: unknown) => {
      const name = (c as object).constructor.name;
      const index = (c as { input?: { IndexName?: string } }).input?.IndexName;
      calls.push({ action: `dynamodb:${DYNAMO_ACTIONS[name] ?? name}`, resource: index ? `${table}/index/${index}` : table });
      return send(c);
    };
  }, SYNTH_TIMEOUT_MS);
  afterAll(async () => {
    client?.destroy();
    await db?.close();
  });

  const allowed = async (c: Call) =>
    (
      await iam.evaluate({
        principal: functionRoleArn(resolved, 'sweeper'),
        action: c.action,
        resource: c.resource,
        context: { 'aws:SecureTransport': 'true' },
      })
    ).allowed;

  it('allows every call of a pass that makes each kind of repair, and nothing else a pipegate function calls', async () => {
    // Prepare: the store as the functions build it on AWS (open executions indexed, the marker
    // moved in the status write), over the recording client.
    const stores = executionStores(client, db.table, { trackOpen: true, markerFollowUp: false });
    const { executions } = stores;
    const pipelines = new PipelinesStore(client, db.table);
    const t0 = Date.parse('2026-11-22T12:00:00.000Z');
    const at = (ms: number) => new Date(t0 + ms).toISOString();
    const make = async (over: Partial<Execution>, to?: 'running' | 'completed'): Promise<Execution> => {
      const e = anExecution({ created_at: at(0), ...over });
      await executions.create(e);
      if (to) await executions.transition(e.execution_id, 'running', { started_at: at(0) });
      if (to === 'completed')
        await executions.transition(e.execution_id, 'completed', {
          completed_at: at(1_000),
          outputs: {},
          ...(e.callback ? { callback_delivery: newDelivery(e.execution_id) } : {}),
        });
      return e;
    };
    await make({}); // pending, its message lost: queued again
    await make({ callback: 'https://hooks.example.com/a' }, 'running'); // past its deadline: failed, callback owed and queued
    await make({ kind: 'run', deployment_id: null }, 'running'); // a run past its deadline: its pipeline's pointer written
    await make({ callback: 'https://hooks.example.com/b' }, 'completed'); // owed callback, message lost: queued again
    const sends: Call[] = [];
    const queue: QueuePort = {
      send: async (name) => {
        sends.push({ action: 'sqs:SendMessage', resource: queues[name] });
      },
    };
    const d = testDeps(db, {
      ...stores,
      pipelines,
      clock: { now: () => new Date(t0 + 3_600_000) },
      config: { ...testConfig(db), executionTimeoutMs: 60_000, sweepPendingAfterSeconds: 300, sweepGraceSeconds: 30 },
    });
    calls.length = 0;

    // Act
    const report = await sweepOnce({ ...d, queue });
    const made: Call[] = [...calls, ...sends];

    // Assess: every repair happened, with no error (so every call above succeeded).
    expect(report).toMatchObject({ requeued: 1, timedOut: 2, callbacksRequeued: 1, errors: 0 });
    expect(d.workflow.started.concat(d.workflow.stopped)).toEqual([]);
    const stack = resolved.stack('Pipegate');
    const machineOf = (id: string) => stack.physical[logicalId(resolved, 'Pipegate', 'AWS::StepFunctions::StateMachine', id)]?.ref ?? '';
    const standard = machineOf('StandardStateMachine');
    const express = machineOf('ExpressStateMachine');
    const executionArn = (machine: string, name: string) => `${machine.replace(':stateMachine:', ':execution:')}:${name}`;
    const distinct = [...new Map(made.map((c) => [`${c.action} ${c.resource}`, c])).values()];
    expect(
      distinct
        .map(
          (c) =>
            `${c.action} ${c.resource.replace(table, 'table').replace(queues.executions, 'executions').replace(queues.callbacks, 'callbacks')}`,
        )
        .sort(),
    ).toEqual([
      'dynamodb:GetItem table',
      'dynamodb:Query table/index/sweep',
      'dynamodb:UpdateItem table',
      'sqs:SendMessage callbacks',
      'sqs:SendMessage executions',
    ]);
    for (const c of distinct) expect([c, await allowed(c)]).toEqual([c, true]);

    // Everything else any pipegate function is granted is refused to the sweeper.
    const secret =
      resolved.stack('PipegateStateful').physical[logicalId(resolved, 'PipegateStateful', 'AWS::SecretsManager::Secret', 'KeyMaterial')]
        ?.ref ?? '';
    const others: Call[] = [
      { action: 'dynamodb:PutItem', resource: table },
      { action: 'dynamodb:DeleteItem', resource: table },
      { action: 'dynamodb:Scan', resource: table },
      { action: 'dynamodb:Query', resource: table },
      { action: 'dynamodb:Query', resource: `${table}/index/gsi1` },
      { action: 'dynamodb:Query', resource: `${table}/index/executions` },
      { action: 'dynamodb:Scan', resource: `${table}/index/sweep` },
      { action: 'sqs:ReceiveMessage', resource: queues.executions },
      { action: 'sqs:DeleteMessage', resource: queues.callbacks },
      { action: 'states:StartExecution', resource: standard },
      { action: 'states:StartExecution', resource: express },
      { action: 'states:StopExecution', resource: executionArn(standard, 'x') },
      { action: 'states:StopExecution', resource: executionArn(express, 'x') },
      { action: 'secretsmanager:GetSecretValue', resource: secret },
    ];
    for (const c of others) expect([c, await allowed(c)]).toEqual([c, false]);
  });
});
