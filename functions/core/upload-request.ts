/**
 * The uploads route's request and answer (POST /v1/deployments/{deployment_id}/uploads/): one
 * valibot schema each, beside the rules that decide what an upload may be.
 */
import * as v from 'valibot';
import { acceptsMediaType, acceptsText, isMediaType, UPLOAD_MAX_BYTES, uploadValue } from './assets';
import { AppError } from './errors';
import type { PresignedUpload } from './ports';
import { UploadAnswer } from './shapes';
import type { ContractInput } from './types';
import { isPlainObject } from './values';
import { isBlankJson, parseJson } from './json-body';

export const UploadRequestSchema = v.pipe(
  v.custom<Record<string, unknown>>(isPlainObject, 'must be an object'),
  v.strictObject(
    {
      media_type: v.pipe(
        v.string('must be a media type (a string)'),
        v.transform((s) => s.trim().toLowerCase()),
        v.check(isMediaType, 'must be a media type such as image/png'),
      ),
      bytes: v.pipe(
        v.number('must be the file size in bytes (a number)'),
        v.integer('must be a whole number of bytes'),
        v.minValue(1, 'must be at least 1'),
        v.maxValue(UPLOAD_MAX_BYTES, `must be at most ${UPLOAD_MAX_BYTES} (the largest upload)`),
      ),
    },
    (issue) => (issue.expected === 'never' ? 'is not a known field' : 'is required'),
  ),
);
export type UploadRequest = v.InferOutput<typeof UploadRequestSchema>;

/** The answer, declared once with the documents' shapes. */
export const UploadAnswerSchema = UploadAnswer;
export type UploadAnswer = v.InferOutput<typeof UploadAnswerSchema>;

/** The request, parsed; 400 for a body that is not one, 415 for one that is not JSON. */
export function parseUploadRequest(body: string | null): UploadRequest {
  let raw: unknown;
  if (!isBlankJson(body)) {
    const parsed = parseJson(body as string);
    if (!parsed.ok) throw new AppError('InvalidInputStructure', parsed.detail);
    raw = parsed.value;
  }
  if (raw === undefined) throw new AppError('InvalidInputStructure', 'body is required: {"media_type": "image/png", "bytes": <size>}');
  const parsed = v.safeParse(UploadRequestSchema, raw, { abortEarly: true });
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = v.getDotPath(issue);
    throw new AppError('InvalidInputStructure', `${path ?? 'body'} ${issue.message}`);
  }
  return parsed.output;
}

/**
 * 422 unless some visible asset input could take a file of this type and size (the caller's
 * word for now; the bytes are sniffed again when the upload is used).
 */
export function checkUploadFits(
  inputs: readonly ContractInput[],
  req: UploadRequest,
  owner: 'deployment' | 'pipeline' = 'deployment',
): void {
  const assets = inputs.filter((i) => i.visible && i.value_type === 'asset');
  if (assets.length === 0) throw new AppError('InvalidInput', `this ${owner} takes no asset inputs`);
  const fits = assets.some(
    (i) => acceptsMediaType(i.media_types, req.media_type) && (i.max_bytes === undefined || req.bytes <= i.max_bytes),
  );
  if (!fits) {
    throw new AppError(
      'InvalidInput',
      `no asset input takes ${req.bytes} bytes of ${req.media_type}: ${assets.map((i) => `'${i.id}' accepts ${acceptsText(i)}`).join('; ')}`,
    );
  }
}

export function uploadAnswer(uploadId: string, put: PresignedUpload): UploadAnswer {
  return {
    upload_url: put.url,
    method: 'PUT',
    headers: put.headers,
    expires_at: put.expires_at,
    asset: { value: uploadValue(uploadId), value_type: 'ASSET' },
  };
}
