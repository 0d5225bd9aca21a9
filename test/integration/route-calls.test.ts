/**
 * The cost model's call lists (bench/aws-calls.ts: PIPELINE_UPLOAD_CALLS, EVENT_STREAM_CALLS)
 * against the calls the services make on a real store (dynalite), counted at the document
 * client as `npm run bench` counts them (requests by operation, the read and write units
 * dynalite reports, index copies from lib/tables.ts). A service that reads or writes once more
 * fails here until the list, and with it the priced rows in docs/aws.md, follows.
 */
import { randomUUID } from 'node:crypto';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { DeploymentsStore } from '../../functions/adapters/deployments.store';
import { executionStores } from '../../functions/adapters/execution-stores';
import { FormsStore } from '../../functions/adapters/forms.store';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import { UploadsStore } from '../../functions/adapters/uploads.store';
import { formToken } from '../../functions/core/form-link';
import type { PipelineDefinition } from '../../functions/core/types';
import { authorize } from '../../functions/services/auth.service';
import { openEventStream } from '../../functions/services/events.service';
import { formExecute, openFormEventStream } from '../../functions/services/form.service';
import { startRun } from '../../functions/services/runs.service';
import { createPipelineUpload } from '../../functions/services/pipeline-uploads.service';
import { push } from '../../functions/services/push.service';
import { taskRun, taskStart } from '../../functions/services/tasks.service';
import { EVENT_STREAM_CALLS, PIPELINE_UPLOAD_CALLS, readUnitsOf, RESUME_CALLS } from '../../bench/aws-calls';
import { StepsStore } from '../../functions/adapters/steps.store';
import { resume } from '../../functions/services/resume.service';
import { cloneCounts, countDynamo, countMethods, diffCounts, emptyCounts, type Counts } from '../../bench/instrument';
import { startTestDb, testKeyMaterial, type TestDb } from '../support/dynamo';
import { testDeps, type TestDeps } from '../support/fakes';
import { dataUri, png } from '../support/media';
import { MemoryObjects } from '../support/memory-objects';
import { publishPipeline, TEST_BASE_URL } from '../support/published';

let db: TestDb;
let objects: MemoryObjects;
/** Every DynamoDB request of the services below, and every object-store call (`objects.<method>`). */
const counts = emptyCounts();
/** The uploads store's requests alone (its own client), apart from the run's own writes. */
const uploadCounts = emptyCounts();

/** Deps over counted clients, with a new pipelines store: a new container, its version cache empty. */
function countedDeps(): TestDeps {
  const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
  countDynamo(client, counts, () => true);
  const uploadsClient = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
  countDynamo(uploadsClient, uploadCounts, () => true);
  return testDeps(
    {
      table: db.table,
      pipelines: new PipelinesStore(client, db.table),
      ...executionStores(client, db.table, { trackOpen: true, markerFollowUp: false }),
      deployments: new DeploymentsStore(client, db.table),
      uploads: countMethods(new UploadsStore(uploadsClient, db.table), 'uploads', uploadCounts),
      steps: new StepsStore(client, db.table, () => objects),
    },
    { forms: new FormsStore(client, db.table), objects: countMethods(objects, 'objects', counts), keyMaterial: testKeyMaterial },
  );
}

/** What `act` asked of DynamoDB (every store's) and the object store. */
async function counted<T>(act: () => Promise<T>): Promise<{ result: T; calls: Counts; uploads: Counts }> {
  const before = cloneCounts(counts);
  const uploadsBefore = cloneCounts(uploadCounts);
  const result = await act();
  const calls = diffCounts(before, counts);
  const uploads = diffCounts(uploadsBefore, uploadCounts);
  for (const [op, n] of Object.entries(uploads.dynamo)) calls.dynamo[op] = (calls.dynamo[op] ?? 0) + n;
  calls.readUnits += uploads.readUnits;
  calls.writeUnits += uploads.writeUnits;
  calls.indexWriteUnits += uploads.indexWriteUnits;
  return { result, calls, uploads };
}

/** Requests by operation and consistency, units, index units: what the lists price. */
const dynamoOf = (c: Counts) => ({
  dynamo: c.dynamo,
  readUnits: c.readUnits,
  writeUnits: c.writeUnits,
  indexWriteUnits: c.indexWriteUnits,
});
/** The object store's port methods called (MemoryObjects' own clock, `nowMs`, is none of them). */
const objectCalls = (c: Counts) =>
  Object.fromEntries(Object.entries(c.storeMethods).filter(([k]) => k.startsWith('objects.') && k !== 'objects.nowMs'));

beforeAll(async () => {
  db = await startTestDb();
  objects = new MemoryObjects();
});
afterAll(async () => {
  await db.close();
});

const withPhoto: PipelineDefinition = {
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)), media_types: ['image/png'], max_bytes: 500_000 },
    about: { type: 'transform', inputs: ['photo'], expression: 'photo.media_type' },
    info: { type: 'output', from: 'about' },
  },
};

describe('the owner upload route makes the calls PIPELINE_UPLOAD_CALLS prices', () => {
  it('a new container: the pipeline read strongly consistent, its version eventually, one put of the upload; no S3 request', async () => {
    // Prepare
    const setup = countedDeps();
    const pipelineId = `upload-calls-${randomUUID().slice(0, 8)}`;
    await push(setup, pipelineId, JSON.stringify(withPhoto));
    const d = countedDeps();
    const { request } = PIPELINE_UPLOAD_CALLS;

    // Act
    const first = await counted(() => createPipelineUpload(d, pipelineId, JSON.stringify({ media_type: 'image/png', bytes: 1000 })));
    const second = await counted(() => createPipelineUpload(d, pipelineId, JSON.stringify({ media_type: 'image/png', bytes: 1000 })));

    // Assess
    expect(dynamoOf(first.calls)).toEqual({
      dynamo: { GetItem: request.strongReads + request.eventualReads, PutItem: request.writes },
      readUnits: readUnitsOf(request),
      writeUnits: request.writes,
      indexWriteUnits: 0,
    });
    // The signing is the function's own: the only object-store call makes no request.
    expect(objectCalls(first.calls)).toEqual({ 'objects.presignUpload': 1 });
    // A warm container keeps the version it read.
    expect(dynamoOf(second.calls).readUnits).toBe(request.strongReads);
  });

  it("a run that uses it: the upload read strongly consistent and claimed, the bytes' HEAD and GET", async () => {
    // Prepare
    const d = countedDeps();
    const pipelineId = `upload-use-${randomUUID().slice(0, 8)}`;
    await push(d, pipelineId, JSON.stringify(withPhoto));
    const photo = png(3, 3);
    const up = await createPipelineUpload(d, pipelineId, JSON.stringify({ media_type: 'image/png', bytes: photo.length }));
    expect(objects.completeUpload(up.upload_url, photo)).toBe('ok');
    const { use } = PIPELINE_UPLOAD_CALLS;

    // Act
    const run = await counted(() => startRun(d, pipelineId, JSON.stringify({ inputs: { photo: up.asset.value } }), TEST_BASE_URL));

    // Assess
    expect(run.result.run_id).toEqual(expect.any(String));
    expect(dynamoOf(run.uploads)).toEqual({
      dynamo: { GetItem: use.strongReads + use.eventualReads, UpdateItem: use.writes },
      readUnits: readUnitsOf(use),
      writeUnits: use.writes,
      indexWriteUnits: 0,
    });
    expect(objectCalls(run.calls)).toEqual({ 'objects.head': 1, 'objects.read': 1 });
    expect(use.s3Gets).toBe(2);
  });
});

describe('opening an event stream makes the calls EVENT_STREAM_CALLS prices', () => {
  /** A deployment with its web form, and one finished execution made through the form. */
  async function formExecution(d: TestDeps) {
    const pub = await publishPipeline(d, `stream-calls-${randomUUID().slice(0, 8)}`, {
      publishBody: JSON.stringify({ form: { enabled: true } }),
    });
    const rec = await d.deployments.get(pub.deploymentId, true);
    if (!rec?.form) throw new Error('no form');
    const token = formToken(rec.form.salt, (await testKeyMaterial.material()).masterKey);
    const accepted = await formExecute(d, {
      token,
      body: '{}',
      contentType: 'application/json',
      baseUrl: TEST_BASE_URL,
      address: '192.0.2.7',
    });
    const id = String((accepted.body as { execution_id: string }).execution_id);
    if (!(await taskStart(d, id)).proceed) throw new Error('did not start');
    await taskRun(d, id);
    return { pub, token, id };
  }

  /** Reads a stream to its end (the execution is terminal: no re-read follows). */
  async function drain(stream: AsyncIterable<string>): Promise<string> {
    let text = '';
    for await (const chunk of stream) text += chunk;
    return text;
  }

  it("a web form's viewer: the link and the deployment strongly consistent, the two rate counters, the execution", async () => {
    // Prepare
    const d = countedDeps();
    const { token, id } = await formExecution(d);
    const { form } = EVENT_STREAM_CALLS;

    // Act
    const opened = await counted(async () =>
      drain(await openFormEventStream(d, { token, executionId: id, address: '192.0.2.8', lastEventId: undefined, baseUrl: TEST_BASE_URL })),
    );

    // Assess
    expect(opened.result).toMatch(/event: done/);
    expect(form.functions).toEqual(['form-events']);
    expect(dynamoOf(opened.calls)).toEqual({
      dynamo: { GetItem: form.strongReads + form.eventualReads, UpdateItem: form.writes },
      readUnits: readUnitsOf(form),
      writeUnits: form.writes,
      indexWriteUnits: 0,
    });
  });

  it("a caller: the authorizer's deployment read, then the execution (a warm container keeps the contract)", async () => {
    // Prepare
    const d = countedDeps();
    const { pub, id } = await formExecution(d);
    const open = async () => drain(await openEventStream(d, pub.auth, id, { lastEventId: undefined, baseUrl: TEST_BASE_URL }));
    await open();
    const { caller } = EVENT_STREAM_CALLS;

    // Act
    const authorized = await counted(() => authorize(d, { 'x-api-key': pub.apiKey }, pub.deploymentId));
    const opened = await counted(open);

    // Assess
    expect(opened.result).toMatch(/event: done/);
    expect(caller.functions).toEqual(['authorizer', 'execution-events']);
    expect(authorized.result.ok).toBe(true);
    expect(dynamoOf(authorized.calls)).toEqual({ dynamo: { GetItem: 1 }, readUnits: 1, writeUnits: 0, indexWriteUnits: 0 });
    expect(dynamoOf(opened.calls)).toEqual({ dynamo: { GetItem: 1 }, readUnits: 0.5, writeUnits: 0, indexWriteUnits: 0 });
    // Together, what the list prices: the authorizer's read strongly consistent, the stream's eventually.
    expect({ strongReads: authorized.calls.dynamo.GetItem, eventualReads: opened.calls.dynamo.GetItem, writes: 0 }).toEqual({
      strongReads: caller.strongReads,
      eventualReads: caller.eventualReads,
      writes: caller.writes,
    });
  });
});

describe('a resume makes the calls RESUME_CALLS prices', () => {
  it('a waiting run: its record and version read, the event kept; the wake: the list, the record again, the generation, one message', async () => {
    // Prepare
    const setup = countedDeps();
    const pipelineId = `resume-calls-${randomUUID().slice(0, 8)}`;
    await push(
      setup,
      pipelineId,
      JSON.stringify({
        nodes: {
          approval: { type: 'wait', timeout_ms: 60_000 },
          said: { type: 'transform', inputs: ['approval'], expression: 'approval.ok' },
          out: { type: 'output', from: 'said' },
        },
      }),
    );
    const run = await startRun(setup, pipelineId, null, TEST_BASE_URL);
    await taskStart(setup, run.run_id);
    await taskRun(setup, run.run_id);
    const url = await setup.resumeLinks.url(TEST_BASE_URL, run.run_id, 'approval');
    // A new container: its version cache empty.
    const d = countedDeps();
    const { request, wake } = RESUME_CALLS;

    // Act
    const resumed = await counted(() =>
      resume(d, { token: url.slice(url.lastIndexOf('/') + 1), body: '{"ok": true}', contentType: 'application/json' }),
    );

    // Assess
    expect(resumed.result.status).toBe('resumed');
    expect(request.functions).toEqual(['resume']);
    expect(dynamoOf(resumed.calls)).toEqual({
      dynamo: {
        GetItem: request.strongReads + request.eventualReads + wake.strongReads + wake.eventualReads,
        UpdateItem: request.writes + wake.writes,
      },
      readUnits: readUnitsOf(request) + readUnitsOf(wake),
      writeUnits: request.writes + wake.writes,
      indexWriteUnits: 0,
    });
    expect(d.queue.on('executions').map((m) => m.body)).toHaveLength(wake.sqsSends);
    expect(objectCalls(resumed.calls)).toEqual({});
  });
});
