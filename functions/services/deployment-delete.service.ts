/** Deleting a deployment (contract §3): at once and for good, its form link and stored objects with it. */
import { AppError } from '../core/errors';
import type { Deps } from '../adapters/deps';
import { deploymentPrefix } from '../core/object-keys';
import { errorFields } from '../adapters/logger';
import { currentDeployment, pipelineMeta } from './pipelines.service';

export async function remove(d: Deps, id: string, confirm: string | undefined) {
  const m = await pipelineMeta(d, id);
  const dep = await currentDeployment(d, m);
  if (!dep) throw new AppError('DeploymentNotFound');
  if (confirm !== dep.deployment_id) {
    throw new AppError(
      'ConfirmationRequired',
      `repeat the deployment id as ?confirm=${dep.deployment_id} to delete it; this cannot be undone`,
    );
  }
  if (!(await d.deployments.markDeleted(dep.deployment_id, d.clock.now().toISOString()))) throw new AppError('DeploymentNotFound');
  await d.pipelines.claimDeployment(id, dep.deployment_id, null);
  // The link already answers 404 (its deployment is deleted); its lookup item goes too.
  if (dep.form)
    await d.forms.removeLink(dep.form.token_hash).catch((err: unknown) => d.log.warn('form link lookup not removed', errorFields(err)));
  await removeDeploymentObjects(d, dep.deployment_id);
}

/**
 * Objects removed with a deployment, in one request: at most this many (about ten list and ten
 * delete requests on S3, a few seconds), so a deployment with a long history cannot push the
 * delete past API Gateway's 29 s. Nothing of it is reachable once the delete is recorded (a
 * link checks its deployment); what a pass leaves, the bucket's lifecycle rule expires.
 */
export const DELETE_REMOVES_AT_MOST = 10_000;

/** The deleted deployment's bytes, as far as one bounded pass reaches; a failure is logged, never the caller's. */
async function removeDeploymentObjects(d: Deps, deploymentId: string): Promise<void> {
  try {
    const removed = await d.objects.removePrefix(deploymentPrefix(deploymentId), { maxKeys: DELETE_REMOVES_AT_MOST });
    if (removed > 0)
      d.log.info('deployment objects removed', { deployment_id: deploymentId, removed, bounded: removed >= DELETE_REMOVES_AT_MOST });
  } catch (err) {
    d.log.error('deployment objects not removed (the lifecycle rule expires them)', { deployment_id: deploymentId, ...errorFields(err) });
  }
}
