#!/usr/bin/env node
// An image job service, standing in for a render farm or an image model's API: a job is
// submitted, takes as long as it was asked to, and is then polled for, or calls back. Its image
// is a real PNG it renders itself (a gradient and a sun, coloured by the prompt): no network,
// nothing downloaded. Node.js built-ins only, so `node` runs it as it is.
//
//   node examples/servers/image-jobs.mjs             # http://127.0.0.1:4013
//   PORT=4023 node examples/servers/image-jobs.mjs
//
// POST /v1/jobs {"prompt": "a lighthouse", "seconds": 180, "size": 64, "style": "sepia",
//                "image_url": "https://…/photo.png", "fail": "out of credits", "callback_url": "https://…"}
//   prompt or image_url is required; seconds (0 to 86400, default 5) is how long the job takes;
//   size (8 to 512, default 64) the image's side in pixels; style (one of STYLES below: mono,
//   sepia, invert, warm, cool, poster) colours the picture; image_url (an 8-bit, non-interlaced
//   PNG the service fetches when the job is submitted) makes the job render that photo in the
//   style instead of painting the prompt, scaled down to fit `size`; fail (a text) makes the job
//   fail with it at its end; callback_url is POSTed the finished job (below).
//   → 202 {"id", "status": "queued", "url"}: `url` is where to poll
//   An Idempotency-Key header makes the submit safe to repeat: the same key answers the same job
//   (202 again, with Idempotent-Replayed: true), and every submit is counted by its key.
//   → 422 {"error"} for a body it cannot take
// GET /v1/jobs/{id}
//   → 200 {"id", "status": "queued" | "running" | "succeeded" | "failed", "progress",
//          "output"?: {"image_url", "media_type", "width", "height", "bytes", "sha256"},
//          "error"?: "…"}
//   with Retry-After (seconds) while the job is not over: the time it still needs, at most
//   RETRY_AFTER_MAX_S (default 60); RETRY_AFTER_MAX_S=0 sends none.
//   A request whose Accept names image/png gets the image itself once the job succeeded (200
//   image/png), and the JSON above until then: a client that wants only the picture polls one URL.
// GET /v1/jobs/{id}/image.png → the finished job's PNG
// GET /v1/jobs → {"jobs": [...]}: every job, newest first; ?idempotency_key=K the one K made
// POST /v1/moderate (body: the photo's bytes, image/png; or JSON {"image_url"})
//   → 200 {"verdict": "approved" | "rejected", "reason"?, "width", "height"}: a stand-in for a
//     content check, it rejects a photo smaller than 32×32 pixels (too small to judge) and a
//     photo whose every pixel is pure red (its "forbidden" picture, easy to make for a test);
//     anything it cannot read as a PNG is rejected with why
// GET /v1/stats → {"submits": {"<Idempotency-Key>": n}, "jobs", "running", "max_running",
//                  "open", "max_open", "moderations", "polls": {"<job id>": n},
//                  "callbacks": [{"job", "attempt", "status" | "error"}]}
//   open: jobs submitted and not over yet; max_open the most at once (what a client's
//   concurrency limit bounds); running and max_running count jobs past their queued time
// POST /v1/stats/reset → 204: max_running and max_open start again from what is open now
//
// The callback: when a job with a callback_url ends, the service POSTs the job (as GET
// /v1/jobs/{id} answers it) to that URL, with the submit's Idempotency-Key. A 5xx answer or
// none is tried again (1 s, 2 s, 4 s, … up to 30 s apart, CALLBACK_ATTEMPTS times, default 12,
// about five minutes), so a receiver that restarts meanwhile still gets it; a 4xx is final.
// Only the callback's host is printed: a callback URL may be a capability.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { deflateSync, inflateSync } from 'node:zlib';

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_IMAGE_BYTES = 4 * 1024 * 1024;
/** What `style` may be: each recolours every pixel. */
const STYLES = {
  mono: ([r, g, b]) => {
    const y = Math.round(0.299 * r + 0.587 * g + 0.114 * b);
    return [y, y, y];
  },
  sepia: ([r, g, b]) => [
    Math.min(255, Math.round(0.393 * r + 0.769 * g + 0.189 * b)),
    Math.min(255, Math.round(0.349 * r + 0.686 * g + 0.168 * b)),
    Math.min(255, Math.round(0.272 * r + 0.534 * g + 0.131 * b)),
  ],
  invert: ([r, g, b]) => [255 - r, 255 - g, 255 - b],
  warm: ([r, g, b]) => [Math.min(255, r + 40), Math.min(255, g + 10), Math.max(0, b - 30)],
  cool: ([r, g, b]) => [Math.max(0, r - 30), Math.min(255, g + 10), Math.min(255, b + 40)],
  poster: ([r, g, b]) => [r, g, b].map((c) => (c >> 6) * 85),
};
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };
const MAX_SECONDS = 86_400;
const RETRY_AFTER_MAX_S = Number(process.env.RETRY_AFTER_MAX_S ?? 60);
const CALLBACK_ATTEMPTS = Number(process.env.CALLBACK_ATTEMPTS ?? 12);
/** The share of a job's time it spends queued (at most a second), before it runs. */
const QUEUED_SHARE = 0.1;

// ---------------------------------------------------------------------------------------------
// The image: an RGB PNG made with zlib, no image library.

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** {width, height, rgb} of an 8-bit, non-interlaced grey, RGB or RGBA PNG, or a reason it cannot be read. */
function decodePng(bytes) {
  if (bytes.length < 8 || !bytes.subarray(0, 8).equals(SIGNATURE)) return { error: 'it is not a PNG' };
  let at = 8;
  let header = null;
  const data = [];
  while (at + 8 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR')
      header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], color: body[9], interlace: body[12] };
    else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  if (header === null) return { error: 'the PNG has no header' };
  const channels = CHANNELS[header.color];
  if (header.depth !== 8 || channels === undefined || header.interlace !== 0)
    return { error: 'only 8-bit, non-interlaced grey, RGB and RGBA PNGs are taken' };
  const { width, height } = header;
  let raw;
  try {
    raw = inflateSync(Buffer.concat(data));
  } catch {
    return { error: 'the PNG image data is corrupt' };
  }
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) return { error: 'the PNG image data is short' };
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
      const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      if (predictor === undefined) return { error: 'the PNG uses an unknown filter' };
      pixels[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const s = pixels.subarray(i * channels, (i + 1) * channels);
    rgb.set(channels < 3 ? [s[0], s[0], s[0]] : [s[0], s[1], s[2]], i * 3);
  }
  return { width, height, rgb };
}

/** An RGB PNG of width×height pixels. */
function encodePng(width, height, rgb) {
  const rows = Buffer.alloc(height * (width * 3 + 1));
  for (let y = 0; y < height; y++) rgb.copy(rows, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 2;
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

/** The picture in the style, scaled down (nearest neighbour) to fit size×size, never up. */
function restyle(image, style, size) {
  const scale = Math.min(1, size / image.width, size / image.height);
  const width = Math.max(1, Math.round(image.width * scale));
  const height = Math.max(1, Math.round(image.height * scale));
  const paint = STYLES[style] ?? ((c) => c);
  const out = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.floor(x / scale));
      const sy = Math.min(image.height - 1, Math.floor(y / scale));
      const at = (sy * image.width + sx) * 3;
      out.set(paint([image.rgb[at], image.rgb[at + 1], image.rgb[at + 2]]), (y * width + x) * 3);
    }
  }
  return encodePng(width, height, out);
}

/** A size×size picture for the prompt: a sky from one colour to another, and a sun. */
function render(prompt, size) {
  const h = createHash('sha256').update(prompt).digest();
  const top = [h[0], h[1], h[2]];
  const bottom = [h[3], h[4], h[5]];
  const sun = [255, 200 + (h[6] % 56), 64 + (h[7] % 64)];
  const [cx, cy, r] = [size * (0.25 + (h[8] / 255) * 0.5), size * (0.25 + (h[9] / 255) * 0.3), size * (0.12 + (h[10] / 255) * 0.1)];
  const rgb = Buffer.alloc(size * size * 3);
  for (let y = 0; y < size; y++) {
    const t = y / Math.max(1, size - 1);
    for (let x = 0; x < size; x++) {
      const inSun = (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
      rgb.set(inSun ? sun : top.map((c, i) => Math.round(c + (bottom[i] - c) * t)), (y * size + x) * 3);
    }
  }
  return { width: size, height: size, rgb };
}

/** A moderation stand-in's verdict on a photo (see the header). */
function moderate(bytes) {
  const image = decodePng(bytes);
  if (image.error) return { verdict: 'rejected', reason: `cannot read the photo: ${image.error}` };
  const { width, height, rgb } = image;
  if (width < 32 || height < 32) return { verdict: 'rejected', reason: 'too small to judge (under 32×32 pixels)', width, height };
  let red = true;
  for (let i = 0; i < width * height && red; i++) red = rgb[i * 3] === 255 && rgb[i * 3 + 1] === 0 && rgb[i * 3 + 2] === 0;
  if (red) return { verdict: 'rejected', reason: 'the picture is forbidden (all red)', width, height };
  return { verdict: 'approved', width, height };
}

/** A URL's bytes, at most MAX_IMAGE_BYTES, or a reason it could not be had. */
async function fetchBytes(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) return { error: `fetching the image answered ${res.status}` };
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > MAX_IMAGE_BYTES) return { error: `the image is larger than ${MAX_IMAGE_BYTES} bytes` };
    return { bytes };
  } catch (e) {
    return { error: `the image could not be fetched (${e?.cause?.code ?? e?.name ?? 'failed'})` };
  }
}

// ---------------------------------------------------------------------------------------------
// Jobs

/** id → job; a job's times are in ms since the epoch. */
const jobs = new Map();
/** Idempotency-Key → the job it made. */
const byKey = new Map();
const stats = { submits: {}, jobs: 0, running: 0, max_running: 0, open: 0, max_open: 0, moderations: 0, polls: {}, callbacks: [] };

const now = () => Date.now();

/** What a submit may hold: the job's settings, or the reason it cannot be taken. */
function readSubmit(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { error: 'the body must be a JSON object' };
  const { prompt, seconds = 5, size = 64, fail, style, image_url: imageUrl, callback_url: callbackUrl } = body;
  if (imageUrl === undefined && (typeof prompt !== 'string' || prompt.trim() === '')) return { error: 'prompt must be a non-empty string' };
  if (imageUrl !== undefined && !isHttpUrl(imageUrl)) return { error: 'image_url must be an absolute http(s) URL' };
  if (style !== undefined && !Object.hasOwn(STYLES, style)) return { error: `style must be one of ${Object.keys(STYLES).join(', ')}` };
  if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= MAX_SECONDS))
    return { error: `seconds must be a number from 0 to ${MAX_SECONDS}` };
  if (!Number.isInteger(size) || size < 8 || size > 512) return { error: 'size must be a whole number from 8 to 512' };
  if (fail !== undefined && (typeof fail !== 'string' || fail === ''))
    return { error: 'fail must be the error text the job should end with' };
  if (callbackUrl !== undefined && !isHttpUrl(callbackUrl)) return { error: 'callback_url must be an absolute http(s) URL' };
  return {
    prompt: typeof prompt === 'string' ? prompt : imageUrl,
    ms: Math.round(seconds * 1000),
    size,
    fail,
    style,
    imageUrl,
    callbackUrl,
  };
}

function isHttpUrl(u) {
  try {
    return typeof u === 'string' && ['http:', 'https:'].includes(new URL(u).protocol);
  } catch {
    return false;
  }
}

function start(settings, key, origin) {
  const id = `job_${randomBytes(6).toString('hex')}`;
  const at = now();
  const job = {
    id,
    key,
    origin,
    ...settings,
    submitted: at,
    runs: at + Math.min(1000, settings.ms * QUEUED_SHARE),
    ends: at + settings.ms,
  };
  jobs.set(id, job);
  stats.jobs += 1;
  stats.open += 1;
  stats.max_open = Math.max(stats.max_open, stats.open);
  // The photo is fetched now, while its link is fresh; the job renders it when it ends.
  if (settings.imageUrl !== undefined) job.image = fetchBytes(settings.imageUrl);
  setTimeout(() => {
    if (job.done) return;
    stats.running += 1;
    stats.max_running = Math.max(stats.max_running, stats.running);
    job.running = true;
  }, job.runs - at).unref();
  setTimeout(() => void finish(job), settings.ms).unref();
  return job;
}

/** The job's picture: the photo in its style, or the prompt's picture in it; or why it cannot be made. */
async function picture(job) {
  if (job.image === undefined) {
    const painted = render(job.prompt, job.size);
    return { png: job.style === undefined ? encodePng(painted.width, painted.height, painted.rgb) : restyle(painted, job.style, job.size) };
  }
  const fetched = await job.image;
  if (fetched.error) return { error: fetched.error };
  const image = decodePng(fetched.bytes);
  if (image.error) return { error: `cannot read the image: ${image.error}` };
  return { png: restyle(image, job.style, job.size) };
}

async function finish(job) {
  const made = job.fail === undefined ? await picture(job) : { error: job.fail };
  if (job.running) stats.running -= 1;
  // A job of no time at all ends before its running timer: it still ran, for an instant.
  else stats.max_running = Math.max(stats.max_running, stats.running + 1);
  stats.open -= 1;
  job.running = false;
  job.done = true;
  if (made.error !== undefined) job.fail = made.error;
  else {
    job.png = made.png;
    job.sha256 = createHash('sha256').update(job.png).digest('hex');
  }
  console.log(`job ${job.id} ${job.fail === undefined ? 'succeeded' : `failed: ${job.fail}`}`);
  if (job.callbackUrl !== undefined) void callBack(job, 1);
}

function statusOf(job) {
  if (job.done) return job.fail === undefined ? 'succeeded' : 'failed';
  return now() < job.runs ? 'queued' : 'running';
}

/** The job as a poll answers it. */
function view(job) {
  const status = statusOf(job);
  const out = { id: job.id, status, prompt: job.prompt, progress: Math.min(1, (now() - job.submitted) / Math.max(1, job.ms)) };
  if (job.style !== undefined) out.style = job.style;
  if (status === 'succeeded') {
    out.output = {
      image_url: `${job.origin}/v1/jobs/${job.id}/image.png`,
      media_type: 'image/png',
      width: job.png.readUInt32BE(16),
      height: job.png.readUInt32BE(20),
      bytes: job.png.length,
      sha256: job.sha256,
    };
  }
  if (status === 'failed') out.error = job.fail;
  return out;
}

async function callBack(job, attempt) {
  const target = new URL(job.callbackUrl).host;
  let outcome;
  try {
    const res = await fetch(job.callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(job.key ? { 'idempotency-key': job.key } : {}) },
      body: JSON.stringify(view(job)),
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    outcome = { status: res.status };
  } catch (e) {
    outcome = { error: e?.cause?.code ?? e?.name ?? 'failed' };
  }
  stats.callbacks.push({ job: job.id, attempt, ...outcome });
  console.log(`callback ${job.id} → ${target} (attempt ${attempt}): ${outcome.status ?? outcome.error}`);
  const again = outcome.status === undefined || outcome.status >= 500;
  if (again && attempt < CALLBACK_ATTEMPTS) {
    setTimeout(() => void callBack(job, attempt + 1), Math.min(30_000, 1000 * 2 ** (attempt - 1))).unref();
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const USAGE =
  'POST /v1/jobs {"prompt" | "image_url", "seconds", "style"}; GET /v1/jobs/{id}; GET /v1/jobs/{id}/image.png; GET /v1/jobs; POST /v1/moderate; GET /v1/stats; POST /v1/stats/reset';

async function moderation(req, res, bytes) {
  stats.moderations += 1;
  let photo = bytes;
  if (/json/.test(req.headers['content-type'] ?? '')) {
    let url;
    try {
      url = JSON.parse(bytes.toString('utf8')).image_url;
    } catch {
      return send(res, 422, { error: 'the body must be a PNG, or JSON {"image_url"}' });
    }
    if (!isHttpUrl(url)) return send(res, 422, { error: 'image_url must be an absolute http(s) URL' });
    const fetched = await fetchBytes(url);
    if (fetched.error) return send(res, 422, { error: fetched.error });
    photo = fetched.bytes;
  }
  const verdict = moderate(photo);
  console.log(`POST /v1/moderate → ${verdict.verdict}${verdict.reason ? `: ${verdict.reason}` : ''}`);
  return send(res, 200, verdict);
}

function handle(req, res, bytes) {
  const text = bytes.toString('utf8');
  const url = new URL(req.url ?? '/', 'http://localhost');
  const origin = `http://${req.headers.host ?? `${host}:${server.address().port}`}`;
  const path = url.pathname.replace(/\/+$/, '');

  if (req.method === 'POST' && path === '/v1/jobs') {
    const key = req.headers['idempotency-key'];
    const counted = typeof key === 'string' && key !== '' ? key : '(none)';
    stats.submits[counted] = (stats.submits[counted] ?? 0) + 1;
    const earlier = typeof key === 'string' && key !== '' ? byKey.get(key) : undefined;
    if (earlier) {
      console.log(`POST /v1/jobs key=${counted} → 202 ${earlier.id} (the same key again: submit ${stats.submits[counted]})`);
      return send(
        res,
        202,
        { id: earlier.id, status: statusOf(earlier), url: `${origin}/v1/jobs/${earlier.id}` },
        { 'idempotent-replayed': 'true' },
      );
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return send(res, 422, { error: 'the body must be JSON' });
    }
    const settings = readSubmit(body);
    if (settings.error) {
      console.log(`POST /v1/jobs → 422 ${settings.error}`);
      return send(res, 422, { error: settings.error });
    }
    const job = start(settings, key, origin);
    if (typeof key === 'string' && key !== '') byKey.set(key, job);
    console.log(
      `POST /v1/jobs key=${counted} → 202 ${job.id} (${settings.ms / 1000} s${settings.style ? `, ${settings.style}` : ''}${settings.imageUrl ? ', of a photo' : ''}${settings.fail ? ', will fail' : ''}${settings.callbackUrl ? ', calls back' : ''})`,
    );
    return send(res, 202, { id: job.id, status: statusOf(job), url: `${origin}/v1/jobs/${job.id}` });
  }

  if (req.method === 'POST' && path === '/v1/moderate') return void moderation(req, res, bytes);
  if (req.method === 'GET' && path === '/v1/stats') return send(res, 200, stats);
  if (req.method === 'POST' && path === '/v1/stats/reset') {
    stats.max_running = stats.running;
    stats.max_open = stats.open;
    res.writeHead(204);
    return res.end();
  }
  if (req.method === 'GET' && path === '/v1/jobs') {
    const key = url.searchParams.get('idempotency_key');
    const list = [...jobs.values()].reverse().filter((j) => key === null || j.key === key);
    return send(res, 200, { jobs: list.map(view) });
  }

  const image = /^\/v1\/jobs\/([\w-]+)\/image\.png$/.exec(path);
  if (req.method === 'GET' && image) {
    const job = jobs.get(image[1]);
    if (!job?.png) return send(res, 404, { error: job ? `job ${job.id} has no image: it is ${statusOf(job)}` : 'no such job' });
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(job.png.length) });
    return res.end(job.png);
  }

  const one = /^\/v1\/jobs\/([\w-]+)$/.exec(path);
  if (req.method === 'GET' && one) {
    const job = jobs.get(one[1]);
    if (!job) return send(res, 404, { error: `no job ${one[1]}` });
    stats.polls[job.id] = (stats.polls[job.id] ?? 0) + 1;
    const answer = view(job);
    if (answer.status === 'succeeded' && /\bimage\/png\b/.test(req.headers.accept ?? '')) {
      console.log(`GET ${path} → succeeded, the image (poll ${stats.polls[job.id]})`);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(job.png.length) });
      return res.end(job.png);
    }
    const headers = {};
    if (!job.done && RETRY_AFTER_MAX_S > 0) {
      headers['retry-after'] = String(Math.min(RETRY_AFTER_MAX_S, Math.max(1, Math.ceil((job.ends - now()) / 1000))));
    }
    console.log(`GET ${path} → ${answer.status} (poll ${stats.polls[job.id]})`);
    return send(res, 200, answer, headers);
  }

  return send(res, 404, { error: USAGE });
}

const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 4013);
const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      send(res, 413, { error: `the body is larger than ${MAX_BODY_BYTES} bytes` });
      req.destroy();
    } else chunks.push(c);
  });
  req.on('end', () => handle(req, res, Buffer.concat(chunks)));
});
server.listen(port, host, () => console.log(`image jobs listening on http://${host}:${server.address().port}`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
