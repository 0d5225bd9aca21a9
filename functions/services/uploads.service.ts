/** The uploads route: a presigned PUT for one file, recorded for single use by one execution. */
import { UPLOAD_URL_TTL_SECONDS, UPLOAD_USE_SECONDS } from '../core/assets';
import { AppError } from '../core/errors';
import { uploadKey } from '../core/object-keys';
import { checkUploadFits, parseUploadRequest, uploadAnswer, type UploadAnswer } from '../core/upload-request';
import { epochSeconds } from '../core/time';
import type { CallerAuth } from '../adapters/api';
import type { Deps } from '../adapters/deps';
import { assertDeployment } from './caller.service';

export async function createUpload(d: Deps, auth: CallerAuth, deploymentId: string, body: string | null): Promise<UploadAnswer> {
  assertDeployment(auth, deploymentId);
  const req = parseUploadRequest(body);
  const dep = await d.deployments.get(auth.deploymentId, true);
  if (!dep || dep.status !== 'live') throw new AppError('DeploymentNotFound');
  checkUploadFits(dep.inputs, req);
  const now = d.clock.now();
  const uploadId = d.ids.uuid();
  // The record first: a URL is never handed out for an upload that could not be used.
  await d.uploads.create({
    upload_id: uploadId,
    deployment_id: dep.deployment_id,
    media_type: req.media_type,
    bytes: req.bytes,
    created_at: now.toISOString(),
    expires_at: epochSeconds(now) + UPLOAD_USE_SECONDS,
    used_by: null,
  });
  const put = await d.objects.presignUpload(uploadKey(dep.deployment_id, uploadId), req.media_type, req.bytes, UPLOAD_URL_TTL_SECONDS);
  return uploadAnswer(uploadId, put);
}
