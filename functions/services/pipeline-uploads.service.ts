/**
 * The owner's uploads route (POST /v1/pipelines/{pipeline_id}/uploads): a presigned PUT for a
 * file a run takes, too large for a definition's data URI. The same request, answer and checks
 * on use as a caller's upload; it belongs to the pipeline, and only its runs may use it.
 */
import * as v from 'valibot';
import { AppError } from '../core/errors';
import { ownerRequestBody } from '../core/json-body';
import { PIPELINE_ID_PATTERN } from '../core/ids';
import { checkUploadFits, UploadRequestSchema, type UploadAnswer } from '../core/upload-request';
import type { ContractInput } from '../core/types';
import type { Deps } from '../adapters/deps';
import { issueUpload } from './issue-upload';

/** Owner routes answer every body problem as 400 Invalid Request, with its path. */
const invalid = (path: string, reason: string) => new AppError('InvalidRequest', [{ path, reason }]);

export async function createPipelineUpload(d: Deps, pipelineId: string, body: string | null): Promise<UploadAnswer> {
  if (!PIPELINE_ID_PATTERN.test(pipelineId)) throw new AppError('PipelineNotFound');
  const raw = ownerRequestBody(body);
  if (raw === undefined) throw invalid('(body)', 'body is required: {"media_type": "image/png", "bytes": <size>}');
  const parsed = v.safeParse(UploadRequestSchema, raw);
  if (!parsed.success)
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: i.message })),
    );
  const req = parsed.output;

  const meta = await d.pipelines.getMeta(pipelineId, true);
  if (!meta) throw new AppError('PipelineNotFound');
  const version = await d.pipelines.getVersion(pipelineId, meta.version);
  if (!version) throw new Error(`pipeline ${pipelineId} points at missing version ${meta.version}`);
  // The latest version's asset inputs, every one (an owner's run sets any input); checked again on use.
  const inputs: ContractInput[] = [];
  for (const [id, node] of Object.entries(version.definition.nodes)) {
    if (node.type !== 'input' || node.value_type !== 'asset') continue;
    inputs.push({
      id,
      value_type: 'asset',
      value: node.value,
      visible: true,
      ...(node.media_types === undefined ? {} : { media_types: [...node.media_types] }),
      ...(node.max_bytes === undefined ? {} : { max_bytes: node.max_bytes }),
    });
  }
  try {
    checkUploadFits(inputs, req, 'pipeline');
  } catch (e) {
    if (e instanceof AppError && e.code === 'InvalidInput') throw invalid('media_type', String(e.detail));
    throw e;
  }
  return issueUpload(d, { kind: 'pipeline', pipeline_id: pipelineId }, req);
}
