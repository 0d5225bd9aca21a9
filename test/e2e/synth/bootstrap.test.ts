/**
 * `npm run start:synth` starts through lib/local/bootstrap.ts as `npm start` does, on a data dir
 * kept on disk between starts:
 * - the repair a kill may need (a Scan putting open executions back on the sweep index) runs
 *   only after an unclean stop, told by the clean-stop file a finished stop leaves;
 * - a data dir whose table lacks one of the template's indexes gets the table rebuilt with it;
 * - the emulated AWS endpoint listens on the port it had last time, so an upload URL created
 *   before a restart is PUT after it; a port taken meanwhile gives way to a free one, loudly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { localEndpointConfig } from '../../../functions/adapters/dynamo';
import { startDynalite } from '../../../lib/local/dynamo';
import type { Template } from '../../../lib/synth/assembly';
import { startSynthRuntime, type SynthRuntime } from '../../../lib/synth/runtime';
import { photoBytesPipeline, png } from '../../support/media';
import { greeting, putUpload, waitUntil, withHelpers, type Helpers } from '../../support/runtime';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../../support/synth';
import { withTemplate } from '../../synth/synth-helpers';
import { HANG_MS } from '../../support/hang';

jest.setTimeout(SYNTH_TIMEOUT_MS);

const dirs: string[] = [];
let rt: (SynthRuntime & Helpers) | undefined;
let lines: string[] = [];

afterEach(async () => {
  await rt?.stop({ drainMs: 0 });
  rt = undefined;
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const newDataDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `pipegate-synth-${name}-`));
  dirs.push(d);
  return d;
};

async function start(dataDir: string): Promise<SynthRuntime & Helpers> {
  lines = [];
  const started = await startSynthRuntime({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    inMemory: false,
    log: (line) => lines.push(line),
    progress: (line) => lines.push(line),
    assembly: await testAssembly(),
  });
  rt = withHelpers(started, undefined);
  return rt;
}

const documentClient = (endpoint: string) =>
  DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'local', ...localEndpointConfig(endpoint) }));

it('repairs the sweep index only after an unclean stop, and then runs what a kill left off it', async () => {
  // Prepare: a finished execution copied as a pending one that a kill left off the sweep index.
  const dataDir = newDataDir('unclean');
  let r = await start(dataDir);
  const firstStart = { unclean: r.uncleanStop, repaired: r.repaired };
  const p = await r.publishPipeline('greeting', greeting);
  const done = await r.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
  const doneId = String(done.body.execution_id);
  await r.waitForExecution(doneId, p.apiKey);
  const finished = await r.deps.executions.get(doneId, r.deps.clock.now(), true);
  if (!finished) throw new Error('no finished execution');
  const planted = randomUUID();
  await r.deps.executions.create({
    ...finished,
    execution_id: planted,
    status: 'pending',
    outputs: null,
    error_message: null,
    started_at: null,
    completed_at: null,
    created_at: new Date().toISOString(),
  });
  const db = documentClient(r.deps.config.dynamodbEndpoint ?? '');
  await db.send(
    new UpdateCommand({
      TableName: r.deps.config.table,
      Key: { pk: `EXEC#${planted}`, sk: 'EXEC' },
      UpdateExpression: 'REMOVE sweep, sweep_at',
    }),
  );
  db.destroy();
  await r.stop({ drainMs: 0 });
  const markedClean = readFileSync(join(dataDir, 'clean-stop'), 'utf8').length > 0;

  // Act 1: a start after the clean stop.
  r = await start(dataDir);
  const afterClean = { unclean: r.uncleanStop, repaired: r.repaired, resumed: r.recovered.resumed };
  const stillPending = (await r.caller('GET', `/v1/deployments/executions/${planted}/status/`, p.apiKey)).body.status;
  await r.stop({ drainMs: 0 });

  // Act 2: the same data dir as a kill leaves it (no clean-stop file).
  rmSync(join(dataDir, 'clean-stop'));
  r = await start(dataDir);
  const afterKill = { unclean: r.uncleanStop, repaired: r.repaired, resumed: r.recovered.resumed };
  const recovered = await r.waitForExecution(planted, p.apiKey);

  // Assess
  expect(firstStart).toEqual({ unclean: false, repaired: null });
  expect(markedClean).toBe(true);
  expect(afterClean).toEqual({ unclean: false, repaired: null, resumed: 0 });
  expect(stillPending).toBe('pending');
  expect(afterKill).toEqual({ unclean: true, repaired: 1, resumed: 1 });
  expect(recovered.status).toBe('completed');
  expect(lines.join('\n')).toMatch(/recovered 1 queued/);
});

it('rebuilds a table that lacks one of the template’s indexes, its items kept', async () => {
  // Prepare: the data dir's table recreated without its first index, as an older data dir has it.
  const dataDir = newDataDir('index');
  let r = await start(dataDir);
  const p = await r.publishPipeline('greeting', greeting);
  const table = r.deps.config.table;
  await r.stop({ drainMs: 0 });
  const dynamo = await startDynalite({ path: join(dataDir, 'db') });
  const client = new DynamoDBClient({ region: 'local', ...localEndpointConfig(dynamo.endpoint) });
  let dropped: string;
  let items: number;
  try {
    const described = (await client.send(new DescribeTableCommand({ TableName: table }))).Table;
    const [first, ...rest] = described?.GlobalSecondaryIndexes ?? [];
    if (!described || !first?.IndexName) throw new Error(`${table} has no index`);
    dropped = first.IndexName;
    const all = (await client.send(new ScanCommand({ TableName: table }))).Items ?? [];
    items = all.length;
    await client.send(new DeleteTableCommand({ TableName: table }));
    const input: CreateTableCommandInput = {
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: described.AttributeDefinitions,
      KeySchema: described.KeySchema,
      ...(rest.length > 0
        ? { GlobalSecondaryIndexes: rest.map((i) => ({ IndexName: i.IndexName, KeySchema: i.KeySchema, Projection: i.Projection })) }
        : {}),
    };
    // dynalite deletes and creates asynchronously (even with its delays at 0): wait for each,
    // with a limit only a hang reaches, before the next call relies on it.
    const until = Date.now() + HANG_MS;
    for (;;) {
      try {
        await client.send(new CreateTableCommand(input));
        break;
      } catch (e) {
        if (Date.now() > until) throw e;
        await new Promise((res) => setTimeout(res, 20));
      }
    }
    await waitUntil(
      async () => (await client.send(new DescribeTableCommand({ TableName: table }))).Table?.TableStatus,
      (status) => status === 'ACTIVE',
    );
    for (const item of all) await client.send(new PutItemCommand({ TableName: table, Item: item }));
  } finally {
    client.destroy();
    await dynamo.close();
  }

  // Act
  r = await start(dataDir);
  const check = new DynamoDBClient({ region: 'local', ...localEndpointConfig(r.deps.config.dynamodbEndpoint ?? '') });
  const indexes = ((await check.send(new DescribeTableCommand({ TableName: table }))).Table?.GlobalSecondaryIndexes ?? []).map(
    (i) => i.IndexName,
  );
  // Counted before this start's own writes: the first request comes after.
  const count = (await check.send(new ScanCommand({ TableName: table, Select: 'COUNT', ConsistentRead: true }))).Count;
  check.destroy();
  const run = await r.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
  const after = await r.waitForExecution(String(run.body.execution_id), p.apiKey);

  // Assess
  expect(items).toBeGreaterThan(0);
  expect(indexes).toContain(dropped);
  expect(count).toBe(items);
  expect(after.status).toBe('completed');
});

describe('the AWS endpoint’s port', () => {
  const dataDir = newDataDir('port');
  const awsPort = () => readFileSync(join(dataDir, 'aws-port'), 'utf8').trim();

  it('is kept across a restart: an upload URL created before it is PUT after it and the execution runs', async () => {
    // Prepare: an upload created, the runtime restarted on the same data dir.
    let r = await start(dataDir);
    const p = await r.publishPipeline('restart-photo', photoBytesPipeline());
    const bytes = png(12, 12);
    const up = await r.caller<{ upload_url: string; headers: Record<string, string>; asset: unknown }>(
      'POST',
      `/v1/deployments/${p.deploymentId}/uploads/`,
      p.apiKey,
      { media_type: 'image/png', bytes: bytes.length },
    );
    const before = awsPort();
    const endpointBefore = r.endpoint.url;
    await r.stop();
    r = await start(dataDir);

    // Act
    const put = await putUpload(up.body, bytes);
    const run = await r.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {
      workflow_input: { photo: up.body.asset },
    });
    const id = String(run.body.execution_id);
    await r.waitForExecution(id, p.apiKey);
    const result = await r.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey);

    // Assess
    expect(up.status).toBe(201);
    expect(up.body.upload_url.startsWith(`${endpointBefore}/`)).toBe(true);
    expect(endpointBefore).toBe(`http://127.0.0.1:${before}`);
    expect(r.endpoint.url).toBe(endpointBefore);
    expect(awsPort()).toBe(before);
    expect(put.status).toBe(200);
    expect(run.status).toBe(202);
    expect(result.body.status).toBe('completed');
    expect((result.body.response_data as Record<string, { value: unknown }>).bytes?.value).toBe(bytes.length);
  });

  it('gives way to a free one, recorded and said, when another process took it', async () => {
    // Prepare: another process holds the recorded port.
    const holder = createServer();
    await new Promise<void>((ok) => holder.listen(0, '127.0.0.1', () => ok()));
    const taken = (holder.address() as { port: number }).port;
    writeFileSync(join(dataDir, 'aws-port'), `${taken}\n`);

    try {
      // Act
      const r = await start(dataDir);

      // Assess
      expect(awsPort()).not.toBe(String(taken));
      expect(r.endpoint.url).toBe(`http://127.0.0.1:${awsPort()}`);
      expect(lines.join('\n')).toMatch(new RegExp(`AWS endpoint: port ${taken} .* is taken; listening on ${awsPort()} instead`));
    } finally {
      await new Promise((ok) => holder.close(ok));
    }
  });
});

it('refuses to start when a role that a function or the state machine acts as has a managed policy it cannot evaluate', async () => {
  // Prepare: an unknown managed policy on the state machine's role, then on a function's role.
  const onRoleOf = (type: string, property: 'Role' | 'RoleArn') => (t: Template) => {
    const owner = Object.values(t.Resources).find((r) => r.Type === type);
    const ref = (owner?.Properties?.[property] as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];
    const role = ref ? t.Resources[ref] : undefined;
    if (!role?.Properties) throw new Error(`no role for ${type}`);
    role.Properties.ManagedPolicyArns = ['arn:aws:iam::aws:policy/NotAPolicyAnyoneKnows'];
  };
  const startWith = async (edit: (t: Template) => void) =>
    startSynthRuntime({
      port: 0,
      dataDir: newDataDir('policy'),
      inMemory: true,
      log: false,
      assembly: withTemplate(await testAssembly(), 'Pipegate', edit),
    }).then(
      async (r) => {
        await r.stop({ drainMs: 0 });
        return 'started';
      },
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );

  // Act
  const machine = await startWith(onRoleOf('AWS::StepFunctions::StateMachine', 'RoleArn'));
  const fn = await startWith(onRoleOf('AWS::Lambda::Function', 'Role'));

  // Assess
  expect(machine).toMatch(/Managed policies not known locally .*NotAPolicyAnyoneKnows/);
  expect(fn).toMatch(/Managed policies not known locally .*NotAPolicyAnyoneKnows/);
});
