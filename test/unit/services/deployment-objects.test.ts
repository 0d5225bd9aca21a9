/**
 * A deleted deployment's objects go with it: one bounded pass at the delete, never failing it.
 */
import type { ObjectStorePort } from '../../../functions/core/ports';
import { DELETE_REMOVES_AT_MOST, remove } from '../../../functions/services/deployment-delete.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example';

/** Records removePrefix calls; fails them when asked. */
function recordingObjects(fail?: Error): ObjectStorePort & { removed: { prefix: string; maxKeys?: number }[] } {
  const removed: { prefix: string; maxKeys?: number }[] = [];
  const unused = () => Promise.reject(new Error('not used by a delete'));
  return {
    removed,
    put: unused,
    head: unused,
    read: unused,
    remove: unused,
    presignUpload: unused,
    presignDownload: unused,
    async removePrefix(prefix, opts) {
      removed.push({ prefix, maxKeys: opts?.maxKeys });
      if (fail) throw fail;
      return 3;
    },
  };
}

async function published(d: TestDeps): Promise<string> {
  const definition = { nodes: { a: { type: 'input', value_type: 'string', value: 'x' }, out: { type: 'output', from: 'a' } } };
  return (await publishPipeline(d, 'echo', { definition, base: BASE })).deploymentId;
}

describe('deleting a deployment', () => {
  it("removes the deployment's objects by its prefix, at most DELETE_REMOVES_AT_MOST of them", async () => {
    // Prepare
    const objects = recordingObjects();
    const d = testDeps(memoryStores(), { objects });
    const id = await published(d);
    // Act
    await remove(d, 'echo', id);
    // Assess
    expect(objects.removed).toEqual([{ prefix: `d/${id}/`, maxKeys: DELETE_REMOVES_AT_MOST }]);
    expect((await d.deployments.get(id))?.deleted_at).not.toBeNull();
  });

  it('still deletes the deployment when the store fails (the lifecycle rule expires the objects)', async () => {
    // Prepare
    const objects = recordingObjects(new Error('S3 unavailable'));
    const d = testDeps(memoryStores(), { objects });
    const id = await published(d);
    // Act
    await remove(d, 'echo', id);
    // Assess
    expect(objects.removed).toHaveLength(1);
    expect((await d.deployments.get(id))?.deleted_at).not.toBeNull();
  });

  it('removes nothing when the confirmation is wrong', async () => {
    // Prepare
    const objects = recordingObjects();
    const d = testDeps(memoryStores(), { objects });
    await published(d);
    // Act / Assess
    await expect(remove(d, 'echo', 'not-the-id')).rejects.toMatchObject({ code: 'ConfirmationRequired' });
    expect(objects.removed).toEqual([]);
  });
});
