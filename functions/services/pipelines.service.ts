/** The owner's pipelines (contract §3): the list, one pipeline, and what the others read of it first. */
import { AppError } from '../core/errors';
import { PIPELINE_ID_PATTERN } from '../core/ids';
import type { DeploymentRecord, PipelineMeta } from '../core/types';
import type { Deps } from '../adapters/deps';

/** The pipeline's meta item, read consistently; 404 for an unknown or malformed id. */
export async function pipelineMeta(d: Deps, id: string): Promise<PipelineMeta> {
  if (!PIPELINE_ID_PATTERN.test(id)) throw new AppError('PipelineNotFound');
  const m = await d.pipelines.getMeta(id, true);
  if (!m) throw new AppError('PipelineNotFound');
  return m;
}

/** The pipeline's deployment while it is live; null when it has none or it was deleted. */
export async function currentDeployment(d: Deps, m: PipelineMeta): Promise<DeploymentRecord | null> {
  if (!m.deployment_id) return null;
  const rec = await d.deployments.get(m.deployment_id, true);
  return rec && rec.status === 'live' ? rec : null;
}

export async function list(d: Deps) {
  const pipelines = await d.pipelines.list();
  return { pipelines: pipelines.sort((a, b) => a.pipeline_id.localeCompare(b.pipeline_id)) };
}

export async function get(d: Deps, id: string) {
  const m = await pipelineMeta(d, id);
  const version = await d.pipelines.getVersion(id, m.version);
  if (!version) throw new Error(`pipeline ${id} points at missing version ${m.version}`);
  return {
    pipeline_id: id,
    version: m.version,
    description: m.description,
    definition: version.definition,
    deployment_id: m.deployment_id,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}
