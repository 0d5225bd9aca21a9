/**
 * Where objects live in the one bucket. Every key starts with what it belongs to, so that
 * deleting a deployment (or a pipeline) can refuse or remove all of its objects by prefix, and
 * a capability link can check the owner of what it serves is still there:
 *
 *   d/<deployment_id>/u/<upload_id>                 a caller's upload, before an execution uses it
 *   d/<deployment_id>/e/<execution_id>/<name>        an API execution's inputs, outputs, large values
 *   p/<pipeline_id>/u/<upload_id>                   an owner's upload, before a run uses it
 *   p/<pipeline_id>/r/<run_id>/<name>                an owner's run (no deployment)
 *
 * `<name>` is a node id or a short role such as `in.photo`, `out.thumbnail`, `val.<node>`.
 * Keys are made here only, from ids the service chose; nothing a caller sends becomes a key.
 */
import { isUuid } from './ids';

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const PIPELINE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type ObjectOwner = { kind: 'deployment'; deployment_id: string } | { kind: 'pipeline'; pipeline_id: string };

export const sameOwner = (a: ObjectOwner, b: ObjectOwner): boolean =>
  a.kind === 'deployment'
    ? b.kind === 'deployment' && a.deployment_id === b.deployment_id
    : b.kind === 'pipeline' && a.pipeline_id === b.pipeline_id;

/** The first part of every key this module makes: `d` (deployments) and `p` (pipelines). */
export const OBJECT_KEY_ROOTS = ['d', 'p'] as const;

export function uploadKey(deploymentId: string, uploadId: string): string {
  return `d/${deploymentId}/u/${uploadId}`;
}

export function pipelineUploadKey(pipelineId: string, uploadId: string): string {
  return `p/${pipelineId}/u/${uploadId}`;
}

/** Every caller's upload key, as an IAM resource pattern: the one object grant of the functions making them. */
export const CALLER_UPLOAD_KEYS = 'd/*/u/*';

/** Every owner's upload key, as an IAM resource pattern: the one grant of the function making them. */
export const PIPELINE_UPLOAD_KEYS = 'p/*/u/*';

/** Every key under an API execution (`executionPrefix` of kind api), as an IAM resource pattern. */
export const CALLER_EXECUTION_KEYS = 'd/*/e/*';

/** Every key under an owner's run (`executionPrefix` of kind run), as an IAM resource pattern. */
export const PIPELINE_RUN_KEYS = 'p/*/r/*';

/** Where an upload's bytes go: under the deployment (callers) or the pipeline (owners) that made it. */
export const ownerUploadKey = (owner: ObjectOwner, uploadId: string): string =>
  owner.kind === 'deployment' ? uploadKey(owner.deployment_id, uploadId) : pipelineUploadKey(owner.pipeline_id, uploadId);

/** Who an execution's objects belong to: its deployment for API executions, its pipeline for runs. */
export function executionOwner(e: { kind: 'run' | 'api'; deployment_id: string | null; pipeline_id: string }): ObjectOwner {
  return e.kind === 'api' && e.deployment_id
    ? { kind: 'deployment', deployment_id: e.deployment_id }
    : { kind: 'pipeline', pipeline_id: e.pipeline_id };
}

/** The prefix of everything an execution keeps: its deployment's for API executions, its pipeline's for runs. */
export function executionPrefix(e: {
  kind: 'run' | 'api';
  deployment_id: string | null;
  pipeline_id: string;
  execution_id: string;
}): string {
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
  if (root === 'p' && PIPELINE.test(owner)) {
    if (kind === 'u' && isUuid(id) && name === '' && !key.endsWith('/')) return { kind: 'pipeline', pipeline_id: owner };
    if (kind === 'r' && isUuid(id) && NAME.test(name)) return { kind: 'pipeline', pipeline_id: owner };
  }
  return null;
}
