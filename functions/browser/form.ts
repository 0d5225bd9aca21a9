/**
 * The web form's behaviour in the browser (bundled by `npm run build:browser`; the page,
 * functions/core/form-page.ts, works as plain HTML until it runs). It checks what a person
 * typed or chose before sending (each problem at its field, in plain words, and listed in a
 * summary at the top, as GOV.UK's error summary does), uploads files straight to storage (the
 * form's uploads route, then a presigned PUT with its progress shown) or, where the bucket takes
 * no PUT from this origin, sends them inline as data URIs, POSTs the execution (a refusal naming
 * an input goes to that input's field), follows it step by step by its event stream (or, where
 * that fails, long-polls it with `Prefer: wait`) and shows the outputs: text as text, a web
 * address as a link, images inline, video and audio playable, files as downloads named
 * `<output>.<extension>`. Everything from a request or a result is inserted as text or an
 * attribute, never as HTML.
 */
import {
  answerWords,
  deadlineWords,
  downloadName,
  itemsWords,
  fileProblem,
  isWebAddress,
  jsonAnswer,
  kindWords,
  labelOf,
  refusalWords,
  refusedInput,
  sizeWords,
  valueProblem,
  waitingWords,
} from '../core/form-text';
import type { FieldSpec } from '../core/form-text';
import type { InputValueType } from '../core/value-types';

type RequestValue = { value: string | number | boolean; value_type: 'RAW' | 'REFERENCE' | 'ASSET' };
interface OutputValue {
  value: string | number | boolean | (string | null)[];
  value_type: 'RAW' | 'ASSET';
  media_type?: string | (string | null)[];
  bytes?: number | (number | null)[];
}
interface Waiting {
  node_id: string;
  resume_url: string;
  expires_at: string;
}
interface FormView {
  status: string;
  status_url?: string;
  completion_duration?: number | null;
  error_message?: string | null;
  response_data?: Record<string, OutputValue>;
  waiting?: Waiting[];
}
interface UploadAnswer {
  upload_url: string;
  headers?: Record<string, string>;
  asset: RequestValue;
}
interface Field {
  spec: FieldSpec;
  control: HTMLInputElement | HTMLTextAreaElement;
  box: HTMLElement;
  error: HTMLElement;
}
interface Problem {
  field: Field | null;
  message: string;
}

/** A refusal the page can say at its fields. */
class Refused extends Error {
  constructor(readonly problems: Problem[]) {
    super(problems.map((p) => p.message).join('; '));
  }
}
/** A failure worth asking again for (the service lost for a moment). */
class Transient extends Error {}

const WAIT_SECONDS = 20;
const MAX_MISSES = 5;
// The stream's first event comes at once (its pending status); without it by then, poll.
const FIRST_EVENT_MS = 10_000;
const MAX_STREAM_ERRORS = 3;

function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page has no #${id}`);
  return e as T;
}

const root = byId<HTMLElement>('pipegate-form');
const formUrl = root.dataset.form ?? '';
const inlineMax = Number(root.dataset.inlineMax);
const direct = root.dataset.uploads === 'direct';
const stepsDeclared = root.dataset.steps === undefined ? null : Number(root.dataset.steps);
const form = byId<HTMLFormElement>('run-form');
const run = byId<HTMLButtonElement>('run');
const progress = byId<HTMLElement>('progress');
const bar = byId<HTMLProgressElement>('upload-progress');
const failure = byId<HTMLElement>('failure');
const outputs = byId<HTMLElement>('outputs');
const outputsHeading = byId<HTMLElement>('outputs-heading');
const summary = byId<HTMLElement>('error-summary');
const summaryList = byId<HTMLUListElement>('error-list');

const VALUE_TYPES: readonly InputValueType[] = ['string', 'integer', 'float', 'boolean', 'reference', 'asset'];
const valueTypeOf = (s: string | undefined): InputValueType => VALUE_TYPES.find((t) => t === s) ?? 'string';

/** The controls of one form of the page (the run's, or a wait's, whose ids carry its prefix). */
const fieldsOf = (within: HTMLElement, prefix = ''): Field[] =>
  Array.from(within.querySelectorAll<HTMLInputElement | HTMLTextAreaElement>('[data-input]'), (control) => {
    const id = control.dataset.input ?? '';
    const box = byId<HTMLElement>(`${prefix}field-${id}`);
    return {
      control,
      box,
      error: byId<HTMLElement>(`${control.id}-error`),
      spec: {
        id,
        label: control.dataset.label ?? labelOf(id, null),
        value_type: valueTypeOf(control.dataset.type),
        media_types: control.dataset.mediaTypes ? control.dataset.mediaTypes.split(',') : null,
        max_bytes: control.dataset.maxBytes ? Number(control.dataset.maxBytes) : null,
      },
    };
  });
const fields: Field[] = fieldsOf(form);
const fieldOf = (id: string): Field | null => fields.find((f) => f.spec.id === id) ?? null;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  return e;
}

function say(text: string): void {
  progress.textContent = text;
}

/* ------------------------------------------------------------------ problems at their fields */

function describedBy(control: Element, id: string, on: boolean): void {
  const ids = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x !== '' && x !== id);
  if (on) ids.unshift(id);
  if (ids.length > 0) control.setAttribute('aria-describedby', ids.join(' '));
  else control.removeAttribute('aria-describedby');
}

function clearProblems(of: readonly Field[] = fields): void {
  for (const f of of) {
    f.error.hidden = true;
    f.error.textContent = '';
    f.box.classList.remove('field-error');
    f.control.removeAttribute('aria-invalid');
    describedBy(f.control, f.error.id, false);
  }
  summaryList.textContent = '';
  summary.hidden = true;
}

/** Each problem at its field, and all of them in the summary at the top, which takes the focus. */
function showProblems(problems: Problem[], of: readonly Field[] = fields): void {
  clearProblems(of);
  for (const p of problems) {
    const item = el('li');
    if (p.field !== null) {
      const f = p.field;
      const hidden = el('span', 'Error: ');
      hidden.className = 'visually-hidden';
      f.error.append(hidden, p.message);
      f.error.hidden = false;
      f.box.classList.add('field-error');
      f.control.setAttribute('aria-invalid', 'true');
      describedBy(f.control, f.error.id, true);
      const link = el('a', p.message);
      link.href = `#${f.control.id}`;
      link.addEventListener('click', (event) => {
        event.preventDefault();
        f.control.focus();
        f.box.scrollIntoView({ block: 'start' });
      });
      item.append(link);
    } else {
      item.textContent = p.message;
    }
    summaryList.append(item);
  }
  summary.hidden = false;
  summary.focus();
  // A wait's problems come while the run goes on: its button and words stay as they are.
  if (of === fields) {
    run.disabled = false;
    say('');
  }
}

function fail(message: string): void {
  failure.textContent = message;
  failure.hidden = false;
  say('');
  run.disabled = false;
}

/** What the page can tell before sending anything. */
function problemsBeforeSending(): Problem[] {
  const problems: Problem[] = [];
  for (const f of fields) {
    let message: string | null = null;
    if (f.spec.value_type === 'asset') {
      const file = (f.control as HTMLInputElement).files?.[0];
      if (file !== undefined) message = fileProblem(f.spec, file);
    } else {
      message = valueProblem(f.spec, f.control.value);
    }
    if (message !== null) problems.push({ field: f, message });
  }
  if (!direct) {
    // Base64 makes a file a third larger; the request carries all of them.
    const inline = fields.reduce((n, f) => n + Math.ceil(((f.control as HTMLInputElement).files?.[0]?.size ?? 0) / 3) * 4, 0);
    if (problems.length === 0 && inline > inlineMax) problems.push({ field: null, message: tooLargeTogether() });
  }
  return problems;
}

const tooLargeTogether = (): string =>
  `The files you chose are too large to send together from this page: at most ${sizeWords(Math.floor((inlineMax * 3) / 4), 'down')} in all. Choose smaller files.`;

/** A refusal of the service, said at the field it names where it names one. */
function refusalProblems(status: number, body: unknown): Problem[] | null {
  const detail = typeof body === 'object' && body !== null ? (body as { detail?: unknown }).detail : undefined;
  const named = refusedInput(detail);
  const field = named === null ? null : fieldOf(named.id);
  if (named !== null && field !== null) return [{ field, message: refusalWords(field.spec, named.reason) }];
  if (status === 413) return [{ field: null, message: tooLargeTogether() }];
  return null;
}

function detailOf(body: unknown, status: number): string {
  const b = typeof body === 'object' && body !== null ? (body as { detail?: unknown; error?: unknown }) : {};
  if (typeof b.detail === 'string') return b.detail;
  if (typeof b.error === 'string') return b.error;
  return `the service answered ${status}`;
}

async function call<T>(url: string, init: RequestInit, refused?: (status: number, body: unknown) => Problem[] | null): Promise<T> {
  const r = await fetch(url, init);
  const text = await r.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (r.status === 404) throw new Error('This form is no longer available.');
  if (r.status === 429) throw new Error(`Too many runs right now: ${detailOf(body, r.status)}.`);
  if (!r.ok) {
    const problems = refused?.(r.status, body) ?? null;
    if (problems !== null) throw new Refused(problems);
    throw new Error(`The run could not start: ${detailOf(body, r.status)}.`);
  }
  return body as T;
}

/* ------------------------------------------------------------------ files */

for (const f of fields) {
  if (f.spec.value_type !== 'asset') continue;
  const picker = f.control as HTMLInputElement;
  picker.addEventListener('change', () => {
    const preview = f.box.querySelector<HTMLImageElement>('.preview');
    const file = picker.files?.[0];
    if (preview === null) return;
    if (file !== undefined && /^image\//.test(file.type)) {
      // A file that is not the picture its name says shows no broken image.
      preview.onerror = () => (preview.hidden = true);
      preview.src = URL.createObjectURL(file);
      preview.alt = `Preview of ${file.name}`;
      preview.hidden = false;
    } else {
      preview.hidden = true;
    }
  });
}

function readFile(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}

// One file at a time, so the bar shows the bytes of all of them: sent so far over the total.
function putFile(put: UploadAnswer, file: File, done: number, total: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', put.upload_url);
    for (const [h, value] of Object.entries(put.headers ?? {})) {
      // The browser sets Content-Length itself (it is signed: the file's exact size).
      if (h.toLowerCase() !== 'content-length') xhr.setRequestHeader(h, value);
    }
    xhr.upload.onprogress = (e) => {
      bar.value = Math.floor((100 * (done + e.loaded)) / total);
      say(`Uploading ${file.name}… ${bar.value}%`);
    };
    xhr.onload = () =>
      xhr.status >= 200 && xhr.status < 300 ? resolve() : reject(new Error(`Storage refused ${file.name} (${xhr.status}).`));
    xhr.onerror = () => reject(new Error(`Could not upload ${file.name}: storage cannot be reached.`));
    xhr.send(file);
  });
}

async function upload(chosen: { field: Field; file: File }[]): Promise<Map<Field, RequestValue>> {
  const total = chosen.reduce((n, c) => n + c.file.size, 0) || 1;
  const assets = new Map<Field, RequestValue>();
  let done = 0;
  bar.value = 0;
  bar.hidden = false;
  try {
    for (const { field, file } of chosen) {
      const put = await call<UploadAnswer>(
        `${formUrl}/uploads`,
        {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ media_type: file.type || 'application/octet-stream', bytes: file.size }),
        },
        // The uploads route names no input: its refusal is about this file.
        (status) => (status === 422 ? [{ field, message: fileProblem(field.spec, file) ?? cannotTake(field.spec, file) }] : null),
      );
      await putFile(put, file, done, total);
      done += file.size;
      assets.set(field, put.asset);
    }
  } finally {
    bar.hidden = true;
  }
  return assets;
}

const cannotTake = (spec: FieldSpec, file: File): string =>
  `${spec.label} cannot take ${file.name}: it must be ${kindWords(spec.media_types)}${spec.max_bytes !== null ? `, ${sizeWords(spec.max_bytes, 'down')} or smaller` : ''}`;

/** Every input's value as the execute route takes it; files uploaded or read on the way. */
async function collect(): Promise<Record<string, RequestValue>> {
  const input: Record<string, RequestValue> = {};
  const files: { field: Field; file: File }[] = [];
  for (const f of fields) {
    const { id, value_type } = f.spec;
    const text = f.control.value;
    if (value_type === 'asset') {
      const file = (f.control as HTMLInputElement).files?.[0];
      if (file !== undefined) files.push({ field: f, file });
    } else if (value_type === 'boolean') {
      input[id] = { value: (f.control as HTMLInputElement).checked, value_type: 'RAW' };
    } else if (value_type === 'integer' || value_type === 'float') {
      input[id] = { value: Number(text.trim()), value_type: 'RAW' };
    } else if (value_type === 'reference') {
      input[id] = { value: text.trim(), value_type: 'REFERENCE' };
    } else {
      input[id] = { value: text, value_type: 'RAW' };
    }
  }
  if (direct && files.length > 0) {
    for (const [field, value] of await upload(files)) input[field.spec.id] = value;
  } else {
    for (const { field, file } of files) input[field.spec.id] = { value: await readFile(file), value_type: 'ASSET' };
  }
  return input;
}

/* ------------------------------------------------------------------ results */

function showOutput(section: HTMLElement, out: OutputValue | undefined): void {
  const id = section.dataset.output ?? '';
  const label = section.dataset.label ?? labelOf(id, null);
  const box = section.querySelector<HTMLElement>('.value');
  if (box === null) return;
  box.textContent = '';
  if (out === undefined) {
    box.append(el('p', 'No value this time.'));
    return;
  }
  if (Array.isArray(out.value)) {
    showGallery(box, id, label, out);
    return;
  }
  if (out.value_type !== 'ASSET') {
    const v = out.value;
    if (typeof v === 'string' && isWebAddress(v)) {
      const link = el('a', v);
      link.className = 'link';
      link.href = v;
      link.rel = 'noopener noreferrer nofollow';
      box.append(link);
    } else {
      box.append(el('pre', typeof v === 'boolean' ? (v ? 'Yes' : 'No') : String(v)));
    }
    return;
  }
  showFile(box, id, label, String(out.value), String(out.media_type ?? ''), typeof out.bytes === 'number' ? out.bytes : undefined);
}

/** One file: shown inline when it is a picture, a video or a sound, and always a download. */
function showFile(
  box: HTMLElement,
  id: string,
  label: string,
  href: string,
  type: string,
  bytes: number | undefined,
  index?: number,
): void {
  if (/^image\//.test(type) && type !== 'image/svg+xml') {
    const img = el('img');
    img.alt = label;
    img.src = href;
    box.append(img);
  } else if (/^(video|audio)\//.test(type)) {
    const media = el(type.startsWith('video/') ? 'video' : 'audio');
    media.controls = true;
    media.src = href;
    media.setAttribute('aria-label', label);
    box.append(media);
  }
  const name = downloadName(id, type, index);
  const link = el('a', `Download ${name}${bytes !== undefined ? ` (${sizeWords(bytes)})` : ''}`);
  link.className = 'download';
  link.href = href;
  link.download = name;
  const line = el('p');
  line.append(link);
  box.append(line);
}

/** A list of files (a map's): a gallery, one figure per file in order; a failed item says so. */
function showGallery(box: HTMLElement, id: string, label: string, out: OutputValue): void {
  const links = out.value as (string | null)[];
  const types = Array.isArray(out.media_type) ? out.media_type : [];
  const sizes = Array.isArray(out.bytes) ? out.bytes : [];
  if (links.length === 0) {
    box.append(el('p', 'No files this time.'));
    return;
  }
  const list = el('ul');
  list.className = 'gallery';
  list.setAttribute('aria-label', label);
  links.forEach((href, i) => {
    const item = el('li');
    const caption = `${label}, ${i + 1} of ${links.length}`;
    if (href === null) item.append(el('p', `${caption}: this one did not work.`));
    else {
      const figure = el('figure');
      showFile(figure, id, caption, href, String(types[i] ?? ''), typeof sizes[i] === 'number' ? (sizes[i] as number) : undefined, i);
      item.append(figure);
    }
    list.append(item);
  });
  box.append(list);
}

function show(result: FormView): void {
  const data = result.response_data ?? {};
  for (const section of Array.from(outputs.querySelectorAll<HTMLElement>('.output'))) {
    const id = section.dataset.output ?? '';
    showOutput(section, Object.hasOwn(data, id) ? data[id] : undefined);
  }
  outputsHeading.hidden = false;
  outputs.hidden = false;
}

const seconds = (ms: number): string => {
  const s = ms / 1000;
  if (s < 1) return 'under a second';
  return s < 10 ? `${s.toFixed(1)} seconds` : `${Math.round(s)} seconds`;
};

// The end of a run, from the stream's done or a poll: true once it is shown.
function finish(body: FormView): boolean {
  if (body.status === 'completed' || body.status === 'failed' || body.status === 'cancelled') closeWaits();
  if (body.status === 'completed') {
    say(`Done in ${seconds(body.completion_duration ?? 0)}.`);
    run.disabled = false;
    show(body);
    return true;
  }
  if (body.status === 'failed' || body.status === 'cancelled') {
    const reason = body.error_message || 'no reason was given';
    fail(`The run ${body.status === 'failed' ? 'did not finish' : 'was cancelled'}: ${reason}${/[.!?]$/.test(reason) ? '' : '.'}`);
    return true;
  }
  return false;
}

/* ------------------------------------------------------------------ waits: the run asks the person */

interface WaitForm {
  id: string;
  label: string;
  section: HTMLElement;
  heading: HTMLElement;
  deadline: HTMLElement;
  form: HTMLFormElement;
  fields: Field[];
  /** Takes any JSON object, typed in its one box. */
  json: boolean;
  /** Where its answer goes, once the run waits on it. */
  url: string | null;
  sent: boolean;
}

const waits: WaitForm[] = Array.from(document.querySelectorAll<HTMLElement>('section[data-wait]'), (section) => {
  const id = section.dataset.wait ?? '';
  const prefix = `wait-${id}-`;
  return {
    id,
    label: section.dataset.label ?? labelOf(id, null),
    section,
    heading: byId<HTMLElement>(`wait-${id}-title`),
    deadline: byId<HTMLElement>(`wait-${id}-deadline`),
    form: section.querySelector('form') ?? document.createElement('form'),
    fields: fieldsOf(section, prefix),
    json: section.dataset.json === 'true',
    url: null,
    sent: false,
  };
});

/** The run waits on these nodes now: each one's form is shown (the first one takes the focus). */
function asked(list: readonly Waiting[] | undefined): void {
  let first = true;
  for (const w of list ?? []) {
    const form = waits.find((x) => x.id === w.node_id);
    if (form === undefined || form.sent || form.url !== null) continue;
    form.url = w.resume_url;
    form.deadline.textContent = deadlineWords(w.expires_at);
    form.section.hidden = false;
    say(waitingWords(form.label));
    if (first) form.heading.focus();
    first = false;
  }
}

/** Whether the page is waiting for the person (a wait's form shown and not sent). */
const awaitingPerson = (): boolean => waits.some((w) => w.url !== null && !w.sent);

function closeWaits(): void {
  for (const w of waits) w.section.hidden = true;
}

/** A wait's answer from its controls, or its problems. */
function answerOf(w: WaitForm): { value: Record<string, unknown> } | { problems: Problem[] } {
  const box = w.fields[0];
  if (w.json && box !== undefined) {
    const parsed = jsonAnswer(box.control.value);
    return parsed.ok ? { value: parsed.value } : { problems: [{ field: box, message: parsed.problem }] };
  }
  const problems: Problem[] = [];
  const value: Record<string, unknown> = {};
  for (const f of w.fields) {
    const text = f.control.value;
    const message = valueProblem(f.spec, text);
    if (message !== null) problems.push({ field: f, message });
    else if (f.spec.value_type === 'boolean') value[f.spec.id] = (f.control as HTMLInputElement).checked;
    else if (f.spec.value_type === 'integer' || f.spec.value_type === 'float') value[f.spec.id] = Number(text.trim());
    else value[f.spec.id] = text;
  }
  return problems.length > 0 ? { problems } : { value };
}

for (const w of waits) {
  w.form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (w.url === null || w.sent) return;
    const answer = answerOf(w);
    if ('problems' in answer) {
      showProblems(answer.problems, w.fields);
      return;
    }
    clearProblems(w.fields);
    const button = w.form.querySelector('button');
    if (button !== null) button.disabled = true;
    (async () => {
      const r = await fetch(w.url ?? '', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(answer.value),
      });
      const body = (await r.json().catch(() => null)) as { detail?: unknown } | null;
      if (r.status === 400 && Array.isArray(body?.detail)) {
        // Each problem at the field it names.
        const problems = (body.detail as { path?: string; reason?: string }[]).map((p) => {
          const field = w.fields.find((f) => f.spec.id === p.path) ?? null;
          return { field, message: `${field?.spec.label ?? labelOf(String(p.path ?? ''), null)}: ${p.reason ?? 'cannot be sent'}` };
        });
        showProblems(problems, w.fields);
        if (button !== null) button.disabled = false;
        return;
      }
      if (r.status >= 500) throw new Error(answerWords(r.status));
      // Sent, or no longer wanted (answered already, too late): the form goes away either way.
      w.sent = true;
      w.section.hidden = true;
      say(answerWords(r.status));
    })().catch((e: unknown) => {
      if (button !== null) button.disabled = false;
      fail(e instanceof Error ? e.message : String(e));
    });
  });
}

/* ------------------------------------------------------------------ following a run */

interface NodeEvent {
  node_id?: string;
  type?: string;
  state?: string;
  done?: number;
  total?: number;
  items_done?: number;
  items_total?: number;
}

/**
 * "Step 2 of 3: Resize": the steps are the nodes that do work (not the inputs and outputs),
 * numbered in the order they start. A run again after a crash starts and finishes some nodes
 * twice: each keeps its number.
 */
function stepWords(): (d: NodeEvent) => string | null {
  const order: string[] = [];
  const total = stepsDeclared;
  return (d) => {
    if (typeof d.total === 'number' && typeof d.done === 'number') return `Step ${d.done} of ${d.total} done`;
    if (d.node_id === undefined || d.type === 'input' || d.type === 'output') return null;
    if (!order.includes(d.node_id)) order.push(d.node_id);
    const name = labelOf(d.node_id, null);
    const n = order.indexOf(d.node_id) + 1;
    const step = total !== null && total > 0 ? `Step ${Math.min(n, total)} of ${total}` : `Step ${n}`;
    if (d.state === 'items' && typeof d.items_done === 'number' && typeof d.items_total === 'number')
      return `${step}: ${itemsWords(d.node_id, d.items_done, d.items_total)}`;
    if (d.state === 'started' || d.state === 'waiting' || d.state === 'polled') return `${step}: ${name}`;
    if (d.state === 'failed') return `${step} did not work: ${name}`;
    if (d.state === 'skipped') return `${step} skipped: ${name}`;
    return `${step} done: ${name}`;
  };
}

/**
 * Follows the run by its event stream, step by step; falls back to the long poll when the
 * browser has no EventSource, the stream is refused (404, 429, 503), nothing arrives in time (a
 * proxy that buffers), or it keeps dropping. The poll then ends it, whatever happened.
 */
function follow(url: string): Promise<void> {
  if (typeof EventSource !== 'function') return poll(url, 0);
  return new Promise((resolve, reject) => {
    const source = new EventSource(`${url}/events`);
    const words = stepWords();
    let over = false;
    let errors = 0;
    const stop = () => {
      over = true;
      clearTimeout(timer);
      source.close();
    };
    const fallback = () => {
      if (over) return;
      stop();
      poll(url, 0).then(resolve, reject);
    };
    const timer = setTimeout(fallback, FIRST_EVENT_MS);
    const heard = (m: MessageEvent<string>): Record<string, unknown> => {
      errors = 0;
      clearTimeout(timer);
      try {
        const parsed: unknown = JSON.parse(m.data);
        return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
      } catch {
        return {};
      }
    };
    source.addEventListener('status', (m) => {
      const d = heard(m);
      if (d.status === 'pending') say('Waiting for its turn…');
      else if (d.status === 'running') say('Starting…');
    });
    source.addEventListener('node', (m) => {
      const text = words(heard(m) as NodeEvent);
      if (text !== null && !awaitingPerson()) say(text);
    });
    source.addEventListener('waiting', (m) => asked((heard(m) as { waiting?: Waiting[] }).waiting));
    source.addEventListener('done', (m) => {
      const d = heard(m) as unknown as FormView;
      stop();
      if (finish(d)) resolve();
      else poll(url, 0).then(resolve, reject);
    });
    // The browser reconnects by itself (with Last-Event-ID) after a drop; a refusal closes it.
    source.onerror = () => {
      if (over) return;
      errors += 1;
      if (source.readyState === EventSource.CLOSED || errors >= MAX_STREAM_ERRORS) fallback();
    };
  });
}

async function poll(url: string, misses: number): Promise<void> {
  let body: FormView | null;
  try {
    let r: Response;
    try {
      r = await fetch(url, { headers: { Prefer: `wait=${WAIT_SECONDS}` } });
    } catch {
      throw new Transient('The service cannot be reached.');
    }
    body = (await r.json().catch(() => null)) as FormView | null;
    if (r.status === 404) throw new Error('This run can no longer be read (the form was changed or taken down).');
    if (!r.ok || body === null) {
      if (r.status >= 500) throw new Transient('The service cannot be reached.');
      throw new Error(`The service answered ${r.status}.`);
    }
  } catch (e) {
    if (e instanceof Transient && misses + 1 < MAX_MISSES) {
      say('Lost contact with the service; trying again…');
      await new Promise((resolve) => setTimeout(resolve, 1000 * (misses + 1)));
      return poll(url, misses + 1);
    }
    throw e;
  }
  if (finish(body)) return;
  asked(body.waiting);
  if (awaitingPerson()) {
    // The service answers at once while the run waits for the person: look again now and then.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return poll(url, 0);
  }
  say(body.status === 'running' ? 'Working…' : 'Waiting for its turn…');
  return poll(url, 0);
}

/* ------------------------------------------------------------------ the form */

form.addEventListener('submit', (event) => {
  event.preventDefault();
  failure.hidden = true;
  outputs.hidden = true;
  outputsHeading.hidden = true;
  const problems = problemsBeforeSending();
  if (problems.length > 0) {
    showProblems(problems);
    return;
  }
  clearProblems();
  run.disabled = true;
  say('Sending…');
  (async () => {
    const input = await collect();
    const body = JSON.stringify({ workflow_input: input });
    if (!direct && new Blob([body]).size > inlineMax) throw new Refused([{ field: null, message: tooLargeTogether() }]);
    const accepted = await call<{ status_url: string }>(
      `${formUrl}/executions`,
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body },
      refusalProblems,
    );
    say('Waiting for its turn…');
    await follow(accepted.status_url);
  })().catch((e: unknown) => {
    if (e instanceof Refused) showProblems(e.problems);
    else fail(e instanceof Error ? e.message : String(e));
  });
});
