import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  CALLER_EXECUTION_KEYS,
  CALLER_UPLOAD_KEYS,
  executionObjectKey,
  executionOwner,
  ownerOfKey,
  ownerUploadKey,
  PIPELINE_RUN_KEYS,
  PIPELINE_UPLOAD_KEYS,
  pipelineUploadKey,
  sameOwner,
  uploadKey,
} from '../../../functions/core/object-keys';

describe('owner upload keys', () => {
  it('puts an owner’s upload under its pipeline and reads the pipeline back as its owner', () => {
    // Prepare
    const id = randomUUID();
    // Act
    const key = ownerUploadKey({ kind: 'pipeline', pipeline_id: 'media' }, id);
    // Assess
    expect(key).toBe(`p/media/u/${id}`);
    expect(pipelineUploadKey('media', id)).toBe(key);
    expect(ownerOfKey(key)).toEqual({ kind: 'pipeline', pipeline_id: 'media' });
  });

  it.each([
    ['a trailing slash', (id: string) => `p/media/u/${id}/`],
    ['a name after the id', (id: string) => `p/media/u/${id}/x`],
    ['an id that is not a uuid', () => 'p/media/u/abc'],
    ['a malformed pipeline', (id: string) => `p/Media!/u/${id}`],
  ])('owns no key with %s', (_name, make) => {
    expect(ownerOfKey(make(randomUUID()))).toBeNull();
  });

  it('tells a run’s owner (its pipeline) from an API execution’s (its deployment)', () => {
    const dep = randomUUID();
    expect(executionOwner({ kind: 'run', deployment_id: null, pipeline_id: 'media' })).toEqual({ kind: 'pipeline', pipeline_id: 'media' });
    expect(executionOwner({ kind: 'api', deployment_id: dep, pipeline_id: 'media' })).toEqual({ kind: 'deployment', deployment_id: dep });
    expect(sameOwner({ kind: 'pipeline', pipeline_id: 'media' }, { kind: 'deployment', deployment_id: 'media' })).toBe(false);
    expect(sameOwner({ kind: 'deployment', deployment_id: dep }, { kind: 'deployment', deployment_id: dep })).toBe(true);
  });
});

describe('the key families the write grants name (IAM resource patterns)', () => {
  /** IAM's match of an object key against a resource pattern: `*` is any run of characters, `/` included. */
  const matches = (pattern: string, key: string): boolean =>
    new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
        .join('.*')}$`,
    ).test(key);
  const PATTERNS = {
    callerUpload: CALLER_UPLOAD_KEYS,
    callerExecution: CALLER_EXECUTION_KEYS,
    ownerUpload: PIPELINE_UPLOAD_KEYS,
    ownerRun: PIPELINE_RUN_KEYS,
  };
  const pipelineId = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,62}$/);
  const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,128}$/);

  it('puts every key a maker makes in its own family and in no other', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), pipelineId, name, (owner, id, pipeline, n) => {
        const made = {
          callerUpload: uploadKey(owner, id),
          callerExecution: executionObjectKey({ kind: 'api', deployment_id: owner, pipeline_id: pipeline, execution_id: id }, n),
          ownerUpload: pipelineUploadKey(pipeline, id),
          ownerRun: executionObjectKey({ kind: 'run', deployment_id: null, pipeline_id: pipeline, execution_id: id }, n),
        };
        for (const [family, key] of Object.entries(made)) {
          expect(
            Object.entries(PATTERNS)
              .filter(([, p]) => matches(p, key))
              .map(([f]) => f),
          ).toEqual([family]);
        }
      }),
    );
  });
});
