/** One upload for its owner (a deployment's caller or a pipeline's owner): the record, then its presigned PUT. */
import { UPLOAD_URL_TTL_SECONDS, UPLOAD_USE_SECONDS } from '../core/assets';
import { ownerUploadKey, type ObjectOwner } from '../core/object-keys';
import { uploadAnswer, type UploadAnswer, type UploadRequest } from '../core/upload-request';
import { epochSeconds } from '../core/time';
import type { Deps } from '../adapters/deps';

/** Records an upload for `owner`, then presigns its PUT. */
export async function issueUpload(d: Deps, owner: ObjectOwner, req: UploadRequest): Promise<UploadAnswer> {
  const now = d.clock.now();
  const uploadId = d.ids.uuid();
  // The record first: a URL is never handed out for an upload that could not be used.
  await d.uploads.create({
    upload_id: uploadId,
    owner,
    media_type: req.media_type,
    bytes: req.bytes,
    created_at: now.toISOString(),
    expires_at: epochSeconds(now) + UPLOAD_USE_SECONDS,
    used_by: null,
  });
  const put = await d.objects.presignUpload(ownerUploadKey(owner, uploadId), req.media_type, req.bytes, UPLOAD_URL_TTL_SECONDS);
  return uploadAnswer(uploadId, put);
}
