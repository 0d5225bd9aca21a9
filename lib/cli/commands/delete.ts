import type { Ctx } from '../context';
import { FailureError, UsageError } from '../errors';
import { checkPipelineId } from '../files';

/** `pipegate delete <pipeline> --yes`: removes the pipeline's deployment, at once and for good. */
export async function remove(ctx: Ctx, pipeline: string, opts: { yes?: boolean }): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  if (opts.yes !== true) {
    throw new UsageError(
      `refusing to delete the deployment of ${pipeline} without --yes`,
      `deleting takes effect at once and cannot be undone: its API key stops working and every request for the deployment or its executions answers 404. To go ahead: pipegate delete ${pipeline} --yes`,
    );
  }
  const { body: r } = await ctx.client.readiness(pipeline);
  if (!r.deployment) throw new FailureError(`${pipeline} has no deployment; nothing to delete`);
  const deploymentId = r.deployment.deployment_id;
  await ctx.client.deleteDeployment(pipeline, deploymentId);
  // The service answers 204 without a body; report what was deleted.
  ctx.out.document({ pipeline_id: pipeline, deployment_id: deploymentId, deleted: true });
  ctx.out.line(`${ctx.out.c.green('✔')} deleted deployment ${deploymentId} of ${ctx.out.c.bold(pipeline)}; its API now answers 404`);
  return 0;
}
