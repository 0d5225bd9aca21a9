/** The callers' uploads route: a presigned PUT for one file, recorded for single use by one execution. */
import { AppError } from '../core/errors';
import { checkUploadFits, parseUploadRequest, type UploadAnswer } from '../core/upload-request';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { assertDeployment } from './caller.service';
import { issueUpload } from './issue-upload';

export async function createUpload(d: Deps, auth: CallerAuth, deploymentId: string, body: string | null): Promise<UploadAnswer> {
  assertDeployment(auth, deploymentId);
  const req = parseUploadRequest(body);
  const dep = await d.deployments.get(auth.deploymentId, true);
  if (!dep || dep.status !== 'live') throw new AppError('DeploymentNotFound');
  checkUploadFits(dep.inputs, req);
  return issueUpload(d, { kind: 'deployment', deployment_id: dep.deployment_id }, req);
}
