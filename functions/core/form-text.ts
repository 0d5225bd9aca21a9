/**
 * What the web form says to a person, in one place: the page's HTML (form-page.ts) and its
 * script (functions/browser/form.ts, bundled for the browser) both speak through these, so a
 * size, a file kind or a problem reads the same whether the page or the service found it.
 * Pure, no imports but types and media-types.ts: it is bundled into the page's script.
 */
import { acceptsMediaType } from './media-types';
import type { InputValueType } from './value-types';

/** One input as the form knows it. */
export interface FieldSpec {
  id: string;
  label: string;
  value_type: InputValueType;
  media_types: readonly string[] | null;
  max_bytes: number | null;
}

/** A node's label, or its id as words: `thumbnail_bytes` → "Thumbnail bytes". */
export function labelOf(id: string, label: string | null | undefined): string {
  if (label !== null && label !== undefined && label.trim() !== '') return label.trim();
  const words = id.replace(/[_-]+/g, ' ').trim();
  return words === '' ? id : words.charAt(0).toUpperCase() + words.slice(1);
}

/** A map's progress in words: "3 of 8 variants done" (the map's id as words). */
export function itemsWords(mapId: string, done: number, total: number): string {
  return `${done} of ${total} ${labelOf(mapId, null).toLowerCase()} done`;
}

const SIZE_UNITS = [
  { size: 1e9, name: 'GB' },
  { size: 1e6, name: 'MB' },
  { size: 1e3, name: 'KB' },
] as const;

/**
 * A size as phones and computers show files today: decimal units (1 MB = 1,000,000 bytes),
 * one decimal below 100 and none above, ".0" dropped: 8,000,000 bytes is "8 MB", 10,485,760
 * is "10.5 MB". A limit is rounded down and a file that breaks it up, so the two never read
 * the same ("10.4 MB or smaller; this file is 10.5 MB").
 */
export function sizeWords(bytes: number, rounding: 'nearest' | 'down' | 'up' = 'nearest'): string {
  const round = rounding === 'down' ? Math.floor : rounding === 'up' ? Math.ceil : Math.round;
  for (const unit of SIZE_UNITS) {
    if (bytes < unit.size) continue;
    const value = bytes / unit.size;
    const scale = value < 100 ? 10 : 1;
    const shown = round(value * scale) / scale;
    return `${String(shown)} ${unit.name}`;
  }
  return bytes === 1 ? '1 byte' : `${bytes} bytes`;
}

/** Format names people know, by media type (the rest: the subtype, as short words go, in capitals). */
const FORMAT_NAMES: Readonly<Record<string, string>> = {
  'image/jpeg': 'JPEG',
  'image/png': 'PNG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
  'image/avif': 'AVIF',
  'image/heic': 'HEIC',
  'image/tiff': 'TIFF',
  'image/bmp': 'BMP',
  'image/svg+xml': 'SVG',
  'audio/mpeg': 'MP3',
  'audio/mp4': 'M4A',
  'audio/wav': 'WAV',
  'audio/x-wav': 'WAV',
  'audio/ogg': 'Ogg',
  'audio/flac': 'FLAC',
  'video/mp4': 'MP4',
  'video/quicktime': 'QuickTime',
  'video/webm': 'WebM',
  'video/x-matroska': 'MKV',
  'application/pdf': 'PDF',
  'application/zip': 'ZIP',
  'application/json': 'JSON',
  'text/plain': 'plain',
  'text/csv': 'CSV',
};

/** What a file of a top-level type is called. */
const KIND_NOUNS: Readonly<Record<string, string>> = {
  image: 'image',
  video: 'video',
  audio: 'sound file',
  text: 'text file',
};

/**
 * File extensions by media type, for the name of a download (`thumbnail.png`). A short table
 * rather than a media type database: the page carries it, and the types that reach it are the
 * ones the service sniffs (file-type's); the rest fall back to their subtype.
 */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/jpeg': 'jpg',
  'image/svg+xml': 'svg',
  'image/x-icon': 'ico',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-wav': 'wav',
  'audio/vnd.wave': 'wav',
  'video/quicktime': 'mov',
  'video/x-matroska': 'mkv',
  'video/mpeg': 'mpg',
  'application/gzip': 'gz',
  'application/x-gzip': 'gz',
  'application/octet-stream': 'bin',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'text/plain': 'txt',
  'text/javascript': 'js',
};

const subtypeWord = (mediaType: string): string =>
  (mediaType.split('/')[1] ?? '')
    .replace(/^(x-|vnd\.)/, '')
    .replace(/\+.*$/, '')
    .replace(/;.*$/, '');

/** "PNG", "JPEG", "MP4": a format's name as people say it. */
export function formatName(mediaType: string): string {
  const known = Object.hasOwn(FORMAT_NAMES, mediaType) ? FORMAT_NAMES[mediaType] : undefined;
  if (known !== undefined) return known;
  const word = subtypeWord(mediaType);
  return word.length <= 4 ? word.toUpperCase() : word;
}

/** The extension a file of this media type is saved with, without the dot: "png", "jpg", "bin". */
export function extensionOf(mediaType: string): string {
  // Own keys only: a media type such as `__proto__` must not reach Object.prototype.
  const known = Object.hasOwn(EXTENSIONS, mediaType.toLowerCase()) ? EXTENSIONS[mediaType.toLowerCase()] : undefined;
  if (known !== undefined) return known;
  const word = subtypeWord(mediaType.toLowerCase());
  return /^[a-z0-9]{1,8}$/.test(word) ? word : 'bin';
}

/**
 * The name a download is saved under: the output's id and its media type's extension; a file of
 * a list output (a map's files) adds its place in the list, from 1 (`variants-2.png`).
 */
export const downloadName = (outputId: string, mediaType: string, index?: number): string =>
  `${outputId}${index === undefined ? '' : `-${index + 1}`}.${extensionOf(mediaType)}`;

/** "a" or "an", by how the word is said (an acronym by its first letter's name: "an MP4", "a PNG"). */
function withArticle(words: string): string {
  const first = words.split(' ')[0] ?? '';
  const acronym = first.length > 1 && first === first.toUpperCase() && /[A-Z]/.test(first);
  const an = acronym ? /^[AEFHILMNORSX]/.test(first) : /^[aeiouAEIOU]/.test(first);
  return `${an ? 'an' : 'a'} ${words}`;
}

const orList = (items: readonly string[]): string =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1] ?? ''}`;

/**
 * What an input takes, said as a person would: "a PNG or JPEG image", "an image", "a PDF
 * document or an image", "a file" when any kind is taken.
 */
export function kindWords(mediaTypes: readonly string[] | null | undefined): string {
  if (!mediaTypes || mediaTypes.length === 0) return 'a file';
  const groups = new Map<string, string[] | 'any'>();
  for (const t of mediaTypes) {
    if (t === 'application/octet-stream') {
      groups.set('file of a kind this service cannot recognise', 'any');
      continue;
    }
    const top = t.split('/')[0] ?? '';
    const noun = KIND_NOUNS[top] ?? (t === 'application/pdf' ? 'document' : 'file');
    const key = noun === 'file' || noun === 'document' ? `${noun}:${t}` : noun;
    const names = groups.get(key);
    if (t.endsWith('/*')) groups.set(key, 'any');
    else if (names !== 'any') groups.set(key, [...(names ?? []), formatName(t)]);
  }
  const phrases = [...groups.entries()].map(([key, names]) => {
    const noun = key.split(':')[0] ?? 'file';
    if (names === 'any') return withArticle(noun);
    return withArticle(`${orList(names)} ${noun}`);
  });
  return orList(phrases);
}

/** What the person should know before choosing a file: its kind and largest size. */
export function fileHint(spec: Pick<FieldSpec, 'media_types' | 'max_bytes'>): string {
  const kind = kindWords(spec.media_types);
  const size = spec.max_bytes !== null ? `, ${sizeWords(spec.max_bytes, 'down')} or smaller` : '';
  const capital = kind.charAt(0).toUpperCase() + kind.slice(1);
  return `${capital}${size}. If you choose none, the example file is used.`;
}

/** A problem with a typed value, before it is sent; null when it may be sent. */
export function valueProblem(spec: FieldSpec, text: string): string | null {
  const t = text.trim();
  switch (spec.value_type) {
    case 'integer':
      if (t === '') return `Enter a whole number for ${spec.label}`;
      return /^[+-]?\d+$/.test(t) && Number.isSafeInteger(Number(t)) ? null : `${spec.label} must be a whole number, like 3`;
    case 'float':
      if (t === '') return `Enter a number for ${spec.label}`;
      return t !== '' && Number.isFinite(Number(t)) ? null : `${spec.label} must be a number, like 2.5`;
    case 'reference': {
      if (t === '') return `Enter a web address for ${spec.label}`;
      return isWebAddress(t) ? null : webAddressProblem(spec.label);
    }
    default:
      return null;
  }
}

const webAddressProblem = (label: string): string => `${label} must be a web address starting with https://, like https://example.com/page`;

/** An absolute http or https URL naming a host: what a reference must be. */
export function isWebAddress(s: string): boolean {
  if (!/^https?:\/\//i.test(s)) return false;
  try {
    return new URL(s).hostname !== '';
  } catch {
    return false;
  }
}

/**
 * A chosen file that cannot pass, before any byte is sent: its kind (the browser's word for
 * it, from its name; the service sniffs the bytes again) and its size.
 */
export function fileProblem(spec: FieldSpec, file: { name: string; type: string; size: number }): string | null {
  if (file.type !== '' && !acceptsMediaType(spec.media_types ?? undefined, file.type)) {
    return `${spec.label} must be ${kindWords(spec.media_types)}; ${file.name} is ${kindWords([file.type])}`;
  }
  if (spec.max_bytes !== null && file.size > spec.max_bytes) {
    return `${spec.label} must be ${sizeWords(spec.max_bytes, 'down')} or smaller; ${file.name} is ${sizeWords(file.size, 'up')}`;
  }
  return null;
}

/**
 * Which input a refusal of the service is about, and why, from its `detail`: the execute
 * route's "input 'photo' is …" and its structural "workflow_input.copies.value must be …".
 */
export function refusedInput(detail: unknown): { id: string; reason: string } | null {
  if (typeof detail !== 'string') return null;
  const named = /^input '([A-Za-z0-9_-]+)' (.+)$/s.exec(detail);
  if (named?.[1] !== undefined && named[2] !== undefined) return { id: named[1], reason: named[2] };
  const path = /^workflow_input\.([A-Za-z0-9_-]+)(?:\.[A-Za-z_]+)? (.+)$/s.exec(detail);
  if (path?.[1] !== undefined && path[2] !== undefined) return { id: path[1], reason: path[2] };
  return null;
}

/** A refusal of the service about one input, in the words the page uses for its own checks. */
export function refusalWords(spec: FieldSpec, reason: string): string {
  const sniffed = /^is (\S+) \(sniffed from its bytes\)/.exec(reason);
  if (sniffed?.[1] !== undefined) {
    const is =
      sniffed[1] === 'application/octet-stream' ? 'the file you chose is not one' : `the file you chose is ${kindWords([sniffed[1]])}`;
    return `${spec.label} must be ${kindWords(spec.media_types)}; ${is}`;
  }
  const tooBig = /^is (\d+) bytes but accepts/.exec(reason);
  if (tooBig?.[1] !== undefined && spec.max_bytes !== null) {
    return `${spec.label} must be ${sizeWords(spec.max_bytes, 'down')} or smaller; the file you chose is ${sizeWords(Number(tooBig[1]), 'up')}`;
  }
  if (/^must be a whole number/.test(reason)) return `${spec.label} must be a whole number, like 3`;
  if (/^must be a finite number/.test(reason)) return `${spec.label} must be a number, like 2.5`;
  if (/^must be an absolute http/.test(reason)) return webAddressProblem(spec.label);
  const refused = /^is not an allowed URL: (.+)$/s.exec(reason);
  if (refused?.[1] !== undefined) return `${spec.label} cannot be used: this service does not fetch that address (${refused[1]})`;
  if (/^names an upload/.test(reason)) return `The file for ${spec.label} did not finish uploading; choose it again`;
  return `${spec.label}: ${reason}`;
}

/* ------------------------------------------------------------------ waits: the run asks the person */

/** What a wait's form says under its heading. */
export const WAIT_HINT = 'The run is waiting for your answer. It carries on once you send it.';
/** A wait that takes any JSON object: its one text box. */
export const ANSWER_LABEL = 'Your answer';
export const ANSWER_HINT = 'A JSON object, like {"approved": true}.';

/** Until when a wait takes its answer, in the reader's own time. */
export function deadlineWords(expiresAt: string): string {
  const at = new Date(expiresAt);
  return Number.isNaN(at.getTime()) ? '' : `Answer before ${at.toLocaleString()}.`;
}

/** What the page says while the run waits for the person. */
export const waitingWords = (label: string): string => `Waiting for your answer: ${label}`;

/** The answer typed as JSON, or why it cannot be sent. */
export function jsonAnswer(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; problem: string } {
  const problem = `Enter ${ANSWER_LABEL.toLowerCase()} as a JSON object, like {"approved": true}`;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? { ok: true, value: value as Record<string, unknown> }
      : { ok: false, problem };
  } catch {
    return { ok: false, problem };
  }
}

/** What the page says after sending an answer, by the service's status. */
export function answerWords(status: number): string {
  if (status >= 200 && status < 300) return 'Sent. The run carries on…';
  if (status === 409) return 'This was already answered: the run carries on with the first answer.';
  if (status === 410) return 'It is too late to answer: the wait is over.';
  if (status === 413) return 'Your answer is too long to send.';
  if (status === 404) return 'This answer can no longer be sent.';
  return `Your answer could not be sent (the service answered ${status}). Try again.`;
}
