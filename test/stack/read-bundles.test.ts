/**
 * Functions that only read objects bundle neither the S3 client nor the Secrets Manager client:
 * their reads and key material are signed requests (functions/adapters/object-reads.ts,
 * key-material.ts). Built as the stack builds them (bench/bundles.ts buildBundle); fails as soon
 * as one of them reaches a client again, statically or through a lazy require. None of them,
 * nor the owner's and callers' functions that only read or write records, evaluates a JSONata
 * expression, so none bundles the evaluator (81 KB): only the definition check (pipeline-push)
 * and the task functions, which share the engine's service (task-run, task-start, task-fail).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBundle } from '../../bench/bundles';
import { accessFor, allFunctionNames, writesObjects } from '../../lib/stacks/permissions';
import type { FunctionName } from '../../lib/routes';

const READ_ONLY = allFunctionNames().filter((n) => accessFor(n).objects.length > 0 && !writesObjects(accessFor(n)));
const CLIENTS = ['@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner', '@aws-sdk/client-secrets-manager'];
const RUNS_PIPELINES = new Set(['task-run', 'task-start', 'task-fail']);
/** Functions that load the documented shapes (shapes.ts) but check no definition. */
const SHAPE_READERS: FunctionName[] = ['pipeline-list', 'upload-create', 'deployment-openapi'];

describe('bundles of the functions that read values', () => {
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(join(tmpdir(), 'pipegate-read-bundles-'));
  });
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('are the value readers the issue names', () => {
    expect(READ_ONLY).toEqual(
      expect.arrayContaining([
        'execution-result',
        'execution-status',
        'run-get',
        'run-list',
        'owner-execution-get',
        'deployment-executions',
        'asset-get',
        'form-execution',
      ]),
    );
  });

  it.each(READ_ONLY)('%s holds no S3 or Secrets Manager client', async (name) => {
    // Act
    const built = await buildBundle(name, out);

    // Assess
    expect(CLIENTS.filter((p) => p in built.packages)).toEqual([]);
    if (!RUNS_PIPELINES.has(name)) expect(Object.keys(built.packages)).not.toContain('jsonata');
  });

  it.each(SHAPE_READERS)('%s holds no JSONata', async (name) => {
    // Act
    const built = await buildBundle(name, out);

    // Assess
    expect(Object.keys(built.packages)).not.toContain('jsonata');
  });

  it('pipeline-push holds JSONata, which the check above looks for by that name', async () => {
    const built = await buildBundle('pipeline-push', out);
    expect(Object.keys(built.packages)).toContain('jsonata');
  });
});
