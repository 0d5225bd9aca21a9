/**
 * `--input id=@file` for asset inputs on run and execute: the files become ASSET values, inline
 * as data URIs while they fit, else uploaded (execute: the deployment's uploads route; run: the
 * pipeline's) and sent as the upload's value.
 */
import { DEFINITION_ASSET_MAX_BYTES, INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import { DEFAULT_MAX_BODY_BYTES } from '../config';
import {
  isFileReference,
  localFile,
  readDataUri,
  sniffFile,
  splitBySize,
  fileStream,
  TransferProgress,
  type LocalFile,
  type SniffedFile,
} from './asset-files';
import type { Upload } from './client';
import type { Ctx } from './context';
import { FailureError, ServiceError } from './errors';
import { splitAssignments, type InputValueType } from './inputs';

/** The `--input` pairs split into files (asset inputs given `@path`) and text for parseInputs. */
export function splitFileInputs(
  pairs: readonly string[],
  types: ReadonlyMap<string, InputValueType>,
  cwd: string,
  limit?: Parameters<typeof localFile>[3],
) {
  const files: LocalFile[] = [];
  const texts: string[] = [];
  for (const [id, text] of splitAssignments(pairs)) {
    if (types.get(id) === 'asset' && isFileReference(text)) files.push(localFile(id, text, cwd, limit));
    else texts.push(`${id}=${text}`);
  }
  return { files, texts };
}

/**
 * The owner routes' body limit as the service ships it (PIPEGATE_MAX_BODY_BYTES' default): a
 * run's inline files together stay within it, or the largest go through uploads.
 */
export const RUN_BODY_MAX_BYTES = DEFAULT_MAX_BODY_BYTES;

/**
 * Each file's asset value for a run: inline as a data URI when it holds at most
 * DEFINITION_ASSET_MAX_BYTES (what a run's data URI may hold) and the request stays within
 * RUN_BODY_MAX_BYTES, else uploaded through the pipeline's uploads route.
 */
export async function runFiles(
  ctx: Ctx,
  pipeline: string,
  files: readonly LocalFile[],
  otherChars: number,
): Promise<Record<string, string>> {
  const sniffed = await Promise.all(files.map(sniffFile));
  const small = sniffed.filter((f) => f.bytes <= DEFINITION_ASSET_MAX_BYTES);
  const { inline, upload } = splitBySize(small, otherChars, RUN_BODY_MAX_BYTES);
  const values: Record<string, string> = {};
  for (const f of [...sniffed.filter((x) => x.bytes > DEFINITION_ASSET_MAX_BYTES), ...upload]) {
    values[f.input] = await uploadFile(ctx, (req) => ctx.client.createRunUpload(pipeline, req), f);
  }
  for (const f of inline) values[f.input] = await readDataUri(f);
  return values;
}

/**
 * Each file's ASSET value for an execution: inline while the whole request (`otherChars` without
 * the files) stays within INLINE_ASSET_BODY_MAX_BYTES, the largest ones uploaded otherwise.
 */
export async function executionFiles(
  ctx: Ctx,
  deploymentId: string,
  key: string,
  files: readonly LocalFile[],
  otherChars: number,
): Promise<Record<string, string>> {
  const sniffed = await Promise.all(files.map(sniffFile));
  const { inline, upload } = splitBySize(sniffed, otherChars, INLINE_ASSET_BODY_MAX_BYTES);
  const values: Record<string, string> = {};
  for (const f of upload) values[f.input] = await uploadFile(ctx, (req) => ctx.client.createUpload(deploymentId, key, req), f);
  for (const f of inline) values[f.input] = await readDataUri(f);
  return values;
}

/** Asks an uploads route (a deployment's or a pipeline's) for one file's PUT. */
export type CreateUpload = (req: { media_type: string; bytes: number }) => Promise<{ body: Upload }>;

/**
 * One upload: ask the uploads route, PUT the file with exactly the headers it answered (the
 * size is signed), and return the asset value to send (in workflow_input, or a run's inputs).
 */
export async function uploadFile(ctx: Ctx, create: CreateUpload, f: SniffedFile): Promise<string> {
  const { out, client } = ctx;
  let answer;
  try {
    answer = (await create({ media_type: f.mediaType, bytes: f.bytes })).body;
  } catch (e) {
    // A caller's route refuses a file no input takes with 422, the owner's with 400.
    if (e instanceof ServiceError && (e.status === 422 || e.status === 400))
      e.hint = `--input ${f.input}=@${f.shown}: the file is ${f.mediaType} (by its bytes), ${f.bytes} bytes`;
    throw e;
  }
  const progress = new TransferProgress(ctx.io.stderr, 'uploading', f.shown, f.bytes);
  // duplex: a streamed request body (Node's fetch requires it); RequestInit's type lacks it.
  const init = { method: answer.method, headers: answer.headers, body: fileStream(f, progress), duplex: 'half' } as RequestInit;
  let res: Response;
  try {
    res = await client.transfer(answer.upload_url, init);
  } finally {
    progress.finish();
  }
  const text = await res.text();
  if (!res.ok) {
    // Object storage answers XML with a <Code>; show it, never the URL (it carries a signature).
    const code = /<Code>([^<]{1,80})<\/Code>/.exec(text)?.[1];
    throw new FailureError(`the upload of ${f.shown} was refused: HTTP ${res.status}${code ? ` ${code}` : ''}`);
  }
  out.note(out.e.dim(`uploaded ${f.shown} (${f.mediaType}, ${f.bytes} bytes) for ${f.input}`));
  return answer.asset.value;
}
