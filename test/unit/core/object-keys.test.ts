import { randomUUID } from 'node:crypto';
import { executionOwner, ownerOfKey, ownerUploadKey, pipelineUploadKey, sameOwner } from '../../../functions/core/object-keys';

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
