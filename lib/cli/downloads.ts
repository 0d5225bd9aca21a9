/**
 * `pipegate result <execution> --download <dir>`: every ASSET output of a result saved as
 * `<dir>/<output><ext>`, the extension from its media type (each file of a list output as
 * `<dir>/<output>-<n><ext>`, n from 1). Nothing the server sends names a
 * path: the output id must be a plain file name, and the link is only fetched. Each file is
 * streamed to a temporary name beside its target, its size checked against the result, then
 * renamed into place; existing files are kept unless `force`.
 */
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve, isAbsolute } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeWebStream } from 'node:stream/web';
import * as v from 'valibot';
import { TransferProgress } from './asset-files';
import type { Ctx } from './context';
import { FailureError, UsageError } from './errors';
import { extensionFor } from './media-types';

/** An ASSET output as a result carries it (docs/contract.md): a fresh link, its type and size. */
export const AssetOutputBody = v.looseObject({
  value: v.pipe(v.string(), v.url()),
  value_type: v.literal('ASSET'),
  media_type: v.string(),
  bytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
  expires_at: v.optional(v.string()),
});

/** A list of files (a map's): each field a list in the files' order, null where an item failed. */
export const AssetListOutputBody = v.looseObject({
  value: v.array(v.nullable(v.pipe(v.string(), v.url()))),
  value_type: v.literal('ASSET'),
  media_type: v.array(v.nullable(v.string())),
  bytes: v.array(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0)))),
});

export interface PlannedDownload {
  output: string;
  url: string;
  mediaType: string;
  bytes: number;
  /** Absolute target path. */
  path: string;
}

// A plain file name: no separator, no leading dot (so never "." or ".." or a hidden file).
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$/;

/** The ASSET outputs of `responseData` and where each goes in `dir`. */
export function planDownloads(responseData: Record<string, { value_type: string }>, dir: string): PlannedDownload[] {
  const planned: PlannedDownload[] = [];
  for (const [output, entry] of Object.entries(responseData)) {
    if (entry.value_type !== 'ASSET') continue;
    if (Array.isArray((entry as { value?: unknown }).value)) {
      planned.push(...planList(output, entry, dir));
      continue;
    }
    const parsed = v.safeParse(AssetOutputBody, entry);
    if (!parsed.success)
      throw new FailureError(
        `output ${output} is an ASSET without a link, media_type and bytes this CLI understands (${v.getDotPath(parsed.issues[0]) ?? 'value'}: ${parsed.issues[0].message})`,
      );
    if (!SAFE_NAME.test(output)) throw new FailureError(`output ${JSON.stringify(output)} is not a plain file name; not saving it`);
    planned.push({
      output,
      url: parsed.output.value,
      mediaType: parsed.output.media_type,
      bytes: parsed.output.bytes,
      path: join(dir, output + extensionFor(parsed.output.media_type)),
    });
  }
  return planned;
}

/** Each file of a list output, as `<output>-<n><ext>`. */
function planList(output: string, entry: unknown, dir: string): PlannedDownload[] {
  const parsed = v.safeParse(AssetListOutputBody, entry);
  if (!parsed.success)
    throw new FailureError(
      `output ${output} is a list of files without links, media types and sizes this CLI understands (${v.getDotPath(parsed.issues[0]) ?? 'value'}: ${parsed.issues[0].message})`,
    );
  if (!SAFE_NAME.test(output)) throw new FailureError(`output ${JSON.stringify(output)} is not a plain file name; not saving it`);
  const { value, media_type: types, bytes } = parsed.output;
  return value.flatMap((url, i) => {
    const mediaType = types[i];
    const size = bytes[i];
    if (url === null || mediaType === null || mediaType === undefined || size === null || size === undefined) return [];
    return [{ output: `${output}[${i}]`, url, mediaType, bytes: size, path: join(dir, `${output}-${i + 1}${extensionFor(mediaType)}`) }];
  });
}

const shownPath = (cwd: string, abs: string): string => {
  const rel = relative(cwd, abs);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
};

/**
 * Downloads every planned file into `dir` (created when missing). Refuses, before fetching
 * anything, when a target exists and `force` is not set. Returns the paths written.
 */
export async function downloadAll(
  ctx: Ctx,
  executionId: string,
  dirGiven: string,
  planned: readonly PlannedDownload[],
  force: boolean,
): Promise<string[]> {
  const dir = resolve(ctx.io.cwd, dirGiven);
  const taken = planned.filter((p) => existsSync(p.path)).map((p) => shownPath(ctx.io.cwd, p.path));
  if (taken.length > 0 && !force)
    throw new UsageError(`would overwrite ${taken.join(', ')}`, 'pass --force to replace them, or choose another directory');
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new UsageError(`--download ${dirGiven} is not a directory`);
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot create ${dirGiven}: ${(e as Error).message}`);
  }
  const written: string[] = [];
  for (const p of planned) {
    await downloadOne(ctx, executionId, dirGiven, p);
    written.push(shownPath(ctx.io.cwd, p.path));
  }
  return written;
}

async function downloadOne(ctx: Ctx, executionId: string, dirGiven: string, p: PlannedDownload): Promise<void> {
  const res = await ctx.client.transfer(p.url, { method: 'GET' });
  if (res.status === 410) {
    await res.body?.cancel();
    throw new FailureError(
      `the link of output ${p.output} has expired (HTTP 410); links are fresh on each read of the result: read it again with pipegate result ${executionId} --download ${dirGiven}`,
    );
  }
  if (!res.ok || res.body === null) {
    await res.body?.cancel();
    throw new FailureError(`downloading output ${p.output} failed: HTTP ${res.status}`);
  }
  const temp = `${p.path}.${process.pid}.part`;
  const progress = new TransferProgress(ctx.io.stderr, 'downloading', p.output, p.bytes);
  let received = 0;
  try {
    const count = async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        received += chunk.length;
        // Stop at once rather than fill the disk with more than the result announced.
        if (received > p.bytes)
          throw new FailureError(`output ${p.output}: the link sent more than the ${p.bytes} bytes the result says; not saved`);
        progress.add(chunk.length);
        yield chunk;
      }
    };
    await pipeline(Readable.fromWeb(res.body as NodeWebStream<Uint8Array>), count, createWriteStream(temp, { flags: 'wx' }));
    if (received !== p.bytes)
      throw new FailureError(`output ${p.output}: received ${received} bytes, but the result says ${p.bytes}; not saved`);
    renameSync(temp, p.path);
  } catch (e) {
    rmSync(temp, { force: true });
    if (e instanceof FailureError) throw e;
    throw new FailureError(`downloading output ${p.output} failed: ${(e as Error).message}`);
  } finally {
    progress.finish();
  }
}
