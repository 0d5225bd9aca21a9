/**
 * Local files as ASSET values: `--input photo=@cat.png` on run and execute. A file is read only
 * as far as needed: its first bytes to sniff its media type (as the service will), then whole
 * for an inline data URI, or streamed for an upload. Every local problem is a UsageError that
 * names the input and the file.
 */
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { sizeText, UPLOAD_MAX_BYTES } from '../../functions/core/assets';
import { SNIFF_BYTES, sniffMediaType } from '../../functions/core/sniff';
import { UsageError } from './errors';
import type { Stream } from './output';

/** An `@path` value: the file as given, where it is, and its size. */
export interface LocalFile {
  /** The input it is for. */
  input: string;
  /** The path as the user wrote it (for messages). */
  shown: string;
  /** Absolute path. */
  path: string;
  bytes: number;
}

/** A file with its sniffed media type. */
export interface SniffedFile extends LocalFile {
  mediaType: string;
}

export const isFileReference = (text: string): boolean => text.startsWith('@');

/**
 * Checks an `@path` value (exists, a file, readable, not empty, not over `maxBytes`) without
 * reading it; `limit` names the limit in the message when the file is too large.
 */
export function localFile(
  input: string,
  text: string,
  cwd: string,
  limit: { maxBytes: number; what: string; hint?: string } = { maxBytes: UPLOAD_MAX_BYTES, what: 'the largest upload' },
): LocalFile {
  const shown = text.slice(1);
  const flag = `--input ${input}=${text}`;
  if (shown === '') throw new UsageError(`${flag}: give a file after @, e.g. --input ${input}=@photo.png`);
  const path = resolve(cwd, shown);
  let bytes: number;
  try {
    const st = statSync(path);
    if (st.isDirectory()) throw new UsageError(`${flag}: ${shown} is a directory; give a file`);
    bytes = st.size;
    // Opened once now, so an unreadable file fails before any request.
    closeSync(openSync(path, 'r'));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`${flag}: ${fileProblem(e, shown)}`);
  }
  if (bytes === 0) throw new UsageError(`${flag}: ${shown} is empty; an asset needs at least one byte`);
  if (bytes > limit.maxBytes) {
    throw new UsageError(
      `${flag}: ${shown} is ${bytes} bytes, over ${limit.what}: ${limit.maxBytes} bytes (${sizeText(limit.maxBytes)})`,
      limit.hint,
    );
  }
  return { input, shown, path, bytes };
}

export function fileProblem(e: unknown, shown: string): string {
  const code = (e as { code?: string }).code;
  if (code === 'ENOENT') return `no such file: ${shown}`;
  if (code === 'EACCES' || code === 'EPERM') return `cannot read ${shown}: permission denied`;
  return `cannot read ${shown}: ${(e as Error).message}`;
}

/** The media type the file's bytes are (sniffed from its head, as the service does). */
export async function sniffFile(f: LocalFile): Promise<SniffedFile> {
  const head = Buffer.alloc(Math.min(SNIFF_BYTES, f.bytes));
  const fd = openSync(f.path, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  return { ...f, mediaType: await sniffMediaType(head) };
}

const base64Length = (bytes: number): number => 4 * Math.ceil(bytes / 3);
const dataUriPrefix = (mediaType: string): string => `data:${mediaType};base64,`;

/** How many characters the file's data URI has, without reading it. */
export const dataUriLength = (f: SniffedFile): number => dataUriPrefix(f.mediaType).length + base64Length(f.bytes);

/** The whole file as a base64 data URI. */
export async function readDataUri(f: SniffedFile): Promise<string> {
  const bytes = await readFile(f.path);
  if (bytes.length !== f.bytes) throw new UsageError(`--input ${f.input}=@${f.shown}: ${f.shown} changed size while being read`);
  return dataUriPrefix(f.mediaType) + bytes.toString('base64');
}

/**
 * Which files go inline and which through an upload: all inline while the request stays within
 * `maxBody`, else the largest ones move to uploads until it does. `otherChars` is the request
 * without the files' values.
 */
export function splitBySize(
  files: readonly SniffedFile[],
  otherChars: number,
  maxBody: number,
): { inline: SniffedFile[]; upload: SniffedFile[] } {
  const inline = [...files].sort((a, b) => a.bytes - b.bytes);
  const upload: SniffedFile[] = [];
  let total = otherChars + inline.reduce((n, f) => n + dataUriLength(f), 0);
  while (total > maxBody && inline.length > 0) {
    const largest = inline.pop() as SniffedFile;
    total -= dataUriLength(largest);
    upload.unshift(largest);
  }
  return { inline, upload };
}

/** Files at least this large show their transfer's progress. */
export const PROGRESS_MIN_BYTES = 1024 * 1024;

/**
 * Progress of one transfer on stderr: on a terminal one line redrawn in place; elsewhere a line
 * at each quarter, so logs stay short. Files under PROGRESS_MIN_BYTES show nothing.
 */
export class TransferProgress {
  private done = 0;
  private shownStep = -1;
  private readonly active: boolean;

  constructor(
    private readonly stream: Stream,
    private readonly verb: string,
    private readonly name: string,
    private readonly total: number,
  ) {
    this.active = total >= PROGRESS_MIN_BYTES;
  }

  add(n: number): void {
    this.done += n;
    if (!this.active) return;
    const pct = Math.min(100, Math.floor((this.done / this.total) * 100));
    if (this.stream.isTTY === true) {
      if (pct !== this.shownStep) this.stream.write(`\r\x1b[2K${this.verb} ${this.name} ${pct}% (${mb(this.done)} of ${mb(this.total)})`);
      this.shownStep = pct;
      return;
    }
    const step = Math.floor(pct / 25);
    if (step > this.shownStep) {
      this.shownStep = step;
      this.stream.write(`${this.verb} ${this.name} ${step * 25}% (${mb(this.done)} of ${mb(this.total)})\n`);
    }
  }

  finish(): void {
    if (this.active && this.stream.isTTY === true) this.stream.write('\r\x1b[2K');
  }
}

const mb = (n: number): string => `${(n / 1_000_000).toFixed(1)} MB`;

/** The file as a web stream, each chunk counted into `progress`. */
export function fileStream(f: LocalFile, progress: TransferProgress): ReadableStream<Uint8Array> {
  const source = Readable.toWeb(createReadStream(f.path)) as ReadableStream<Uint8Array>;
  return source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        progress.add(chunk.byteLength);
        controller.enqueue(chunk);
      },
    }),
  );
}
