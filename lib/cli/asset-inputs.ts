/**
 * `--input id=@file` for asset inputs on run and execute: the files become ASSET values, inline
 * as data URIs while the request stays within the inline limit, else (execute only) through
 * the deployment's uploads route. Owner runs have no uploads route: their files go inline and
 * each must fit what a run's asset value may hold.
 */
import { DEFINITION_ASSET_MAX_BYTES, INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import { isFileReference, localFile, readDataUri, sniffFile, splitBySize, fileStream, TransferProgress, type LocalFile, type SniffedFile } from './asset-files';
import type { Ctx } from './context';
import { FailureError, ServiceError } from './errors';
import { splitAssignments, type InputValueType } from './inputs';

/** The `--input` pairs split into files (asset inputs given `@path`) and text for parseInputs. */
export function splitFileInputs(pairs: readonly string[], types: ReadonlyMap<string, InputValueType>, cwd: string, limit?: Parameters<typeof localFile>[3]) {
  const files: LocalFile[] = [];
  const texts: string[] = [];
  for (const [id, text] of splitAssignments(pairs)) {
    if (types.get(id) === 'asset' && isFileReference(text)) files.push(localFile(id, text, cwd, limit));
    else texts.push(`${id}=${text}`);
  }
  return { files, texts };
}

/** The limit an owner run's file meets: a run's asset value is a data URI of at most 64 KiB decoded. */
export const RUN_FILE_LIMIT = {
  maxBytes: DEFINITION_ASSET_MAX_BYTES,
  what: 'the largest file an owner run takes (runs send files inline; they have no uploads route)',
  hint: 'publish the pipeline and send larger files with pipegate execute <deployment> --input <id>=@<file>, which uploads them',
};

/** Each file as a data URI, by input id (owner runs). */
export async function inlineFiles(files: readonly LocalFile[]): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const f of files) values[f.input] = await readDataUri(await sniffFile(f));
  return values;
}

/**
 * Each file's ASSET value for an execution: inline while the whole request (`otherChars` without
 * the files) stays within INLINE_ASSET_BODY_MAX_BYTES, the largest ones uploaded otherwise.
 */
export async function executionFiles(ctx: Ctx, deploymentId: string, key: string, files: readonly LocalFile[], otherChars: number): Promise<Record<string, string>> {
  const sniffed = await Promise.all(files.map(sniffFile));
  const { inline, upload } = splitBySize(sniffed, otherChars, INLINE_ASSET_BODY_MAX_BYTES);
  const values: Record<string, string> = {};
  for (const f of upload) values[f.input] = await uploadFile(ctx, deploymentId, key, f);
  for (const f of inline) values[f.input] = await readDataUri(f);
  return values;
}

/**
 * One upload: ask the uploads route, PUT the file with exactly the headers it answered (the
 * size is signed), and return the value to put in workflow_input.
 */
export async function uploadFile(ctx: Ctx, deploymentId: string, key: string, f: SniffedFile): Promise<string> {
  const { out, client } = ctx;
  let answer;
  try {
    answer = (await client.createUpload(deploymentId, key, { media_type: f.mediaType, bytes: f.bytes })).body;
  } catch (e) {
    if (e instanceof ServiceError && e.status === 422) e.hint = `--input ${f.input}=@${f.shown}: the file is ${f.mediaType} (by its bytes), ${f.bytes} bytes`;
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
