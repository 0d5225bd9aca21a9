/**
 * Where objects live in the one bucket. Every key starts with what it belongs to, so that
 * deleting a deployment (or a pipeline) can refuse or remove all of its objects by prefix, and
 * a capability link can check the owner of what it serves is still there:
 *
 *   d/<deployment_id>/u/<upload_id>                 a caller's upload, before an execution uses it
 *   d/<deployment_id>/e/<execution_id>/<name>        an API execution's inputs, outputs, large values
 *   p/<pipeline_id>/r/<run_id>/<name>                an owner's run (no deployment)
 *
 * `<name>` is a node id or a short role such as `in.photo`, `out.thumbnail`, `val.<node>`.
 * Keys are made here only, from ids the service chose; nothing a caller sends becomes a key.
 */
import { isUuid } from './ids';

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const PIPELINE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type ObjectOwner =
  | { kind: 'deployment'; deployment_id: string }
  | { kind: 'pipeline'; pipeline_id: string };

/** The first part of every key this module makes: `d` (deployments) and `p` (pipelines). */
export const OBJECT_KEY_ROOTS = ['d', 'p'] as const;

export function uploadKey(deploymentId: string, uploadId: string): string {
  return `d/${deploymentId}/u/${uploadId}`;
}

/** The prefix of everything an execution keeps: its deployment's for API executions, its pipeline's for runs. */
export function executionPrefix(e: { kind: 'run' | 'api'; deployment_id: string | null; pipeline_id: string; execution_id: string }): string {
  return e.kind === 'api' && e.deployment_id ? `d/${e.deployment_id}/e/${e.execution_id}/` : `p/${e.pipeline_id}/r/${e.execution_id}/`;
}

export function executionObjectKey(e: Parameters<typeof executionPrefix>[0], name: string): string {
  if (!NAME.test(name)) throw new Error(`invalid object name '${name}'`);
  return executionPrefix(e) + name;
}

export const deploymentPrefix = (deploymentId: string): string => `d/${deploymentId}/`;
export const pipelinePrefix = (pipelineId: string): string => `p/${pipelineId}/`;

/** Who an object belongs to, from its key; null for a key this module did not make. */
export function ownerOfKey(key: string): ObjectOwner | null {
  const [root, owner = '', kind, id = '', name = '', ...rest] = key.split('/');
  if (rest.length > 0) return null;
  if (root === 'd' && isUuid(owner)) {
    if (kind === 'u' && isUuid(id) && name === '' && !key.endsWith('/')) return { kind: 'deployment', deployment_id: owner };
    if (kind === 'e' && isUuid(id) && NAME.test(name)) return { kind: 'deployment', deployment_id: owner };
    return null;
  }
  if (root === 'p' && PIPELINE.test(owner) && kind === 'r' && isUuid(id) && NAME.test(name)) return { kind: 'pipeline', pipeline_id: owner };
  return null;
}
