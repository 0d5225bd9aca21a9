/**
 * Owner secrets on a real store (dynalite): sealed at rest, listed without values, read for
 * runs at most once per TTL, and used by a run without ever reaching its record.
 */
import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import { KmsDataKeys } from '../../functions/adapters/kms';
import { OwnerSecretsStore } from '../../functions/adapters/owner-secrets.store';
import { sealSecret } from '../../functions/core/api-key';
import { localKmsTransport } from '../../lib/local/kms';
import type { Deps } from '../../functions/adapters/deps';
import { AppError } from '../../functions/core/errors';
import type { HttpRequest } from '../../functions/core/ports';
import { deleteSecret, listSecrets, putSecret } from '../../functions/services/owner-secrets.service';
import { startRun } from '../../functions/services/runs.service';
import { push } from '../../functions/services/push.service';
import { taskRun, taskStart } from '../../functions/services/tasks.service';
import { startTestDb, TEST_KMS_KEY, testDataKeys, testKeyMaterial, testKms, type TestDb } from '../support/dynamo';
import { testDeps } from '../support/fakes';
import { rejection } from '../support/thrown';

const VALUE = 'sk_live_planted_4c1f9e2a7b';

let db: TestDb;
let d: Deps;
const calls: HttpRequest[] = [];

beforeAll(async () => {
  db = await startTestDb();
  d = testDeps(db, {
    http: async (req) => {
      calls.push(req);
      // An upstream that echoes what it was sent.
      return { status: 200, headers: {}, body: JSON.stringify({ auth: req.headers.Authorization }) };
    },
  });
});
afterAll(async () => {
  await db.close();
});

const caught = (p: Promise<unknown>): Promise<AppError> => rejection(p, AppError);

describe('the owner secrets use cases', () => {
  it('set, list (names only) and delete a secret', async () => {
    // Act
    const set = await putSecret(d, 'SHIPPING_TOKEN', JSON.stringify({ value: VALUE }));
    const listed = await listSecrets(d);
    await deleteSecret(d, 'SHIPPING_TOKEN');
    const after = await listSecrets(d);
    const again = await caught(deleteSecret(d, 'SHIPPING_TOKEN'));

    // Assess
    expect(set).toEqual({ name: 'SHIPPING_TOKEN', updated_at: expect.any(String) });
    expect(listed).toEqual({ secrets: [{ name: 'SHIPPING_TOKEN', updated_at: set.updated_at }] });
    expect(JSON.stringify(listed)).not.toContain(VALUE);
    expect(after).toEqual({ secrets: [] });
    expect(again.code).toBe('SecretNotFound');
  });

  it.each([
    ['a bad name', '9lives', JSON.stringify({ value: 'x' }), 'name'],
    ['no body', 'OK', null, '(body)'],
    ['an empty value', 'OK', JSON.stringify({ value: '' }), 'value'],
    ['a value that is not a string', 'OK', JSON.stringify({ value: 5 }), 'value'],
    ['an extra field', 'OK', JSON.stringify({ value: VALUE, note: 1 }), 'note'],
    ['a body that is not JSON', 'OK', `{"value": "${VALUE}"`, '(body)'],
  ])('refuse %s with 400, never repeating the value', async (_what, name, body, path) => {
    // Act
    const e = await caught(putSecret(d, name, body));

    // Assess
    expect(e.code).toBe('InvalidRequest');
    expect(e.detail).toEqual([expect.objectContaining({ path })]);
    expect(JSON.stringify(e.body())).not.toContain(VALUE);
  });

  it('stores the value sealed, bound to its name', async () => {
    // Prepare
    await putSecret(d, 'A_TOKEN', JSON.stringify({ value: VALUE }));
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });

    // Act
    const item = (await client.send(new GetCommand({ TableName: db.table, Key: keys.ownerSecret('A_TOKEN') }))).Item;
    // Someone with write access to the table copies the sealed value onto another name.
    await client.send(new PutCommand({ TableName: db.table, Item: { ...item, ...keys.ownerSecret('B_TOKEN'), name: 'B_TOKEN' } }));
    const copied = d.ownerSecrets.values(['B_TOKEN']);

    // Assess
    expect(JSON.stringify(item)).not.toContain(VALUE);
    expect(item?.sealed).toMatch(/^v2\./);
    // KMS refuses the data key under the other name's encryption context.
    await expect(copied).rejects.toThrow(expect.objectContaining({ name: 'InvalidCiphertextException' }));
    await deleteSecret(d, 'B_TOKEN');
    await deleteSecret(d, 'A_TOKEN');
    client.destroy();
  });
});

describe('reads for runs', () => {
  it('read the table at most once per TTL, see a change after it, a write through the same store at once, and a new name within 5 s', async () => {
    // Prepare
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    let now = 1_000_000;
    const cached = new OwnerSecretsStore(client, db.table, testKeyMaterial, testDataKeys, 60_000, () => now);
    const other = new OwnerSecretsStore(client, db.table, testKeyMaterial, testDataKeys, 0);
    await other.put('ROTATING', 'first', new Date().toISOString());
    let queries = 0;
    const counting = client.send.bind(client);
    client.send = ((command: { constructor: { name: string } }, ...rest: unknown[]) => {
      if (command.constructor.name === 'QueryCommand') queries += 1;
      return (counting as (...a: unknown[]) => unknown)(command, ...rest);
    }) as typeof client.send;

    // Act
    const first = await cached.values(['ROTATING']);
    await other.put('ROTATING', 'second', new Date().toISOString());
    const withinTtl = await cached.values(['ROTATING', 'MISSING']);
    await other.put('MISSING', 'now set', new Date().toISOString());
    const tooSoon = await cached.values(['MISSING']);
    now += 5_000;
    const reread = await cached.values(['ROTATING', 'MISSING']);
    now += 60_000;
    const afterTtl = await cached.values(['ROTATING']);
    await cached.put('ROTATING', 'third', new Date().toISOString());
    const afterOwnWrite = await cached.values(['ROTATING']);

    // Assess
    expect(first.get('ROTATING')).toBe('first');
    expect([...withinTtl]).toEqual([['ROTATING', 'first']]);
    expect(tooSoon.size).toBe(0);
    expect([...reread]).toEqual([
      ['ROTATING', 'second'],
      ['MISSING', 'now set'],
    ]);
    expect(afterTtl.get('ROTATING')).toBe('second');
    expect(afterOwnWrite.get('ROTATING')).toBe('third');
    expect(queries).toBe(4);
    await other.remove('ROTATING');
    await other.remove('MISSING');
    client.destroy();
  });
});

describe('under the KMS key', () => {
  /** A data keys port over the test KMS that counts the calls it passes on. */
  function counting(): { port: KmsDataKeys; calls: string[] } {
    const calls: string[] = [];
    const transport = localKmsTransport(testKms);
    return { calls, port: new KmsDataKeys((op, body) => (calls.push(op), transport(op, body)), TEST_KMS_KEY) };
  }

  it('asks KMS for one data key per seal, and opens each data key once per process however often the cache refills', async () => {
    // Prepare
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const kms = counting();
    let now = 1_000_000;
    const store = new OwnerSecretsStore(client, db.table, testKeyMaterial, kms.port, 60_000, () => now);
    await store.put('K_ONE', 'one', new Date().toISOString());
    await store.put('K_TWO', 'two', new Date().toISOString());

    // Act
    const first = await store.values(['K_ONE', 'K_TWO']);
    now += 60_000;
    const refilled = await store.values(['K_ONE', 'K_TWO']);

    // Assess
    expect([...first]).toEqual([
      ['K_ONE', 'one'],
      ['K_TWO', 'two'],
    ]);
    expect([...refilled]).toEqual([...first]);
    expect(kms.calls.sort()).toEqual(['Decrypt', 'Decrypt', 'GenerateDataKey', 'GenerateDataKey']);
    await store.remove('K_ONE');
    await store.remove('K_TWO');
    client.destroy();
  });

  it('still opens a value sealed the earlier way (v1, master key) and seals it under KMS when it is set again', async () => {
    // Prepare: an item as the previous release wrote it.
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const { masterKey } = await testKeyMaterial.material();
    const legacy = sealSecret(JSON.stringify({ name: 'OLD_TOKEN', value: VALUE }), masterKey, randomBytes(12));
    await client.send(
      new PutCommand({
        TableName: db.table,
        Item: { ...keys.ownerSecret('OLD_TOKEN'), name: 'OLD_TOKEN', sealed: legacy, updated_at: '2026-01-01T00:00:00.000Z' },
      }),
    );

    // Act
    const before = await d.ownerSecrets.values(['OLD_TOKEN']);
    await putSecret(d, 'OLD_TOKEN', JSON.stringify({ value: `${VALUE}-2` }));
    const item = (await client.send(new GetCommand({ TableName: db.table, Key: keys.ownerSecret('OLD_TOKEN') }))).Item;
    const after = await d.ownerSecrets.values(['OLD_TOKEN']);

    // Assess
    expect(before.get('OLD_TOKEN')).toBe(VALUE);
    expect(item?.sealed).toMatch(/^v2\./);
    expect(after.get('OLD_TOKEN')).toBe(`${VALUE}-2`);
    await deleteSecret(d, 'OLD_TOKEN');
    client.destroy();
  });

  it('keeps neither the value nor its data key in the table, in any spelling', async () => {
    // Prepare: the data key KMS hands out for this seal is recorded.
    const keysSeen: Buffer[] = [];
    const transport = localKmsTransport(testKms);
    const spy = new KmsDataKeys(async (op, body) => {
      const out = await transport(op, body);
      if (typeof out.Plaintext === 'string') keysSeen.push(Buffer.from(out.Plaintext, 'base64'));
      return out;
    }, TEST_KMS_KEY);
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const store = new OwnerSecretsStore(client, db.table, testKeyMaterial, spy, 0);

    // Act
    await store.put('PLANTED', VALUE, new Date().toISOString());
    const item = JSON.stringify((await client.send(new GetCommand({ TableName: db.table, Key: keys.ownerSecret('PLANTED') }))).Item);
    const opened = await store.values(['PLANTED']);

    // Assess
    expect(opened.get('PLANTED')).toBe(VALUE);
    // GenerateDataKey's and Decrypt's answers: the same key.
    expect(keysSeen).toHaveLength(2);
    expect(keysSeen[1]?.equals(keysSeen[0] as Buffer)).toBe(true);
    for (const text of [VALUE, Buffer.from(VALUE).toString('base64'), Buffer.from(VALUE).toString('base64url')])
      expect(item).not.toContain(text);
    const dataKey = keysSeen[0] as Buffer;
    for (const text of [dataKey.toString('base64'), dataKey.toString('base64url'), dataKey.toString('hex')])
      expect(item).not.toContain(text);
    await store.remove('PLANTED');
    client.destroy();
  });
});

describe('a run that uses a secret', () => {
  const definition = {
    nodes: {
      call: { type: 'http', url: 'https://rates.example.com/v1/quote', headers: { Authorization: 'Bearer {{secrets.RATES_TOKEN}}' } },
      echoed: { type: 'transform', inputs: ['call'], expression: 'call.auth' },
      auth: { type: 'output', from: 'echoed' },
    },
  };

  async function run(): Promise<Record<string, unknown>> {
    const started = await startRun(d, 'uses-secret', null, 'https://x');
    await taskStart(d, started.run_id);
    await taskRun(d, started.run_id);
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const item = (await client.send(new GetCommand({ TableName: db.table, Key: keys.execution(started.run_id) }))).Item ?? {};
    client.destroy();
    return item;
  }

  it('warns at push, fails naming the missing secret, then sends it and keeps it out of the record', async () => {
    // Act
    const pushed = await push(d, 'uses-secret', JSON.stringify(definition));
    const failed = await run();
    await putSecret(d, 'RATES_TOKEN', JSON.stringify({ value: VALUE }));
    const repushed = await push(d, 'uses-secret', JSON.stringify(definition));
    const completed = await run();

    // Assess
    expect(pushed.body.warnings).toEqual([
      {
        path: 'nodes.call.headers.Authorization',
        reason: "secret 'RATES_TOKEN' is not set; runs fail until it is (pipegate secrets set RATES_TOKEN)",
      },
    ]);
    expect(failed.status).toBe('failed');
    expect(failed.error_message).toBe(
      "Node 'call' failed: secret 'RATES_TOKEN' is not set (set it with: pipegate secrets set RATES_TOKEN)",
    );
    expect(repushed.body).not.toHaveProperty('warnings');
    expect(calls.at(-1)?.headers.Authorization).toBe(`Bearer ${VALUE}`);
    expect(completed.status).toBe('completed');
    expect(completed.outputs).toEqual({ auth: 'Bearer [redacted]' });
    expect(JSON.stringify(completed)).not.toContain(VALUE);
  });
});
