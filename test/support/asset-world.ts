/**
 * What the service tests of ASSET inputs and uploads stand on: a test database (dynalite) and
 * in-memory object storage on one clock the test moves (an upload's day of use runs out),
 * deployments stored as publish writes them, and a caller's requests made through the services.
 */
import type { CallerAuth } from '../../functions/core/consumers';
import type { ContractInput, DeploymentRecord } from '../../functions/core/types';
import { execute } from '../../functions/services/caller.service';
import { createUpload } from '../../functions/services/uploads.service';
import { startTestDb, type TestDb } from './dynamo';
import { aDeploymentRecord, testDeps, type TestDeps } from './fakes';
import { MemoryObjects } from './memory-objects';

const BASE_URL = 'http://127.0.0.1';

export interface AssetWorld {
  db: TestDb;
  d: TestDeps;
  objects: MemoryObjects;
  now(): Date;
  /** Moves the clock on, for the services and the object storage alike. */
  advance(seconds: number): void;
  /** A live deployment taking `inputs` (one output, `out`), stored; and what its callers' requests carry. */
  aDeployment(inputs: ContractInput[]): Promise<{ dep: DeploymentRecord; auth: CallerAuth }>;
  /** A caller's POST executions with this `workflow_input`. */
  submit(auth: CallerAuth, workflowInput: Record<string, unknown>, idempotencyKey?: string): ReturnType<typeof execute>;
  /** What an uploads route answers, made now, for `bytes` bytes of `mediaType`: a PUT of exactly that, for an hour. */
  uploadAnswer(bytes: number, mediaType?: string): unknown;
  /** A caller's POST uploads for `bytes` bytes of `mediaType`. */
  upload(auth: CallerAuth, bytes: number, mediaType?: string): ReturnType<typeof createUpload>;
  close(): Promise<void>;
}

export async function startAssetWorld(startsAt: string): Promise<AssetWorld> {
  let nowMs = Date.parse(startsAt);
  const now = () => new Date(nowMs);
  const db = await startTestDb();
  const objects = new MemoryObjects(() => nowMs);
  const d = testDeps(db, { objects, clock: { now } });
  return {
    db,
    d,
    objects,
    now,
    advance: (seconds) => {
      nowMs += seconds * 1000;
    },
    async aDeployment(inputs) {
      const at = now().toISOString();
      const dep = aDeploymentRecord({
        pipeline_id: 'media',
        inputs,
        outputs: [{ id: 'out', visible: true }],
        published_at: at,
        created_at: at,
      });
      await db.deployments.create(dep);
      return { dep, auth: { deploymentId: dep.deployment_id, revision: dep.revision, deleted: false } };
    },
    submit: (auth, workflowInput, idempotencyKey) =>
      execute(d, auth, {
        deploymentId: auth.deploymentId,
        body: JSON.stringify({ workflow_input: workflowInput }),
        contentType: 'application/json',
        idempotencyKey,
        baseUrl: BASE_URL,
      }),
    uploadAnswer: (bytes, mediaType = 'image/png') => ({
      upload_url: expect.any(String),
      method: 'PUT',
      headers: { 'content-type': mediaType, 'content-length': String(bytes) },
      expires_at: new Date(nowMs + 3600_000).toISOString(),
      asset: { value: expect.stringMatching(/^upload:[0-9a-f-]{36}$/), value_type: 'ASSET' },
    }),
    upload: (auth, bytes, mediaType = 'image/png') =>
      createUpload(d, auth, auth.deploymentId, JSON.stringify({ media_type: mediaType, bytes })),
    close: () => db.close(),
  };
}
