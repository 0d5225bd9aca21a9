#!/usr/bin/env node
// An image job service, standing in for a render farm or an image model's API: a job is
// submitted, takes as long as it was asked to, and is then polled for, or calls back. Its image
// is a real PNG it renders itself (a gradient and a sun, coloured by the prompt): no network,
// nothing downloaded. Node.js built-ins only, so `node` runs it as it is.
//
//   node examples/servers/image-jobs.mjs             # http://127.0.0.1:4013
//   PORT=4023 node examples/servers/image-jobs.mjs
//
// POST /v1/jobs {"prompt": "a lighthouse", "seconds": 180, "size": 64,
//                "fail": "out of credits", "callback_url": "https://…"}
//   only prompt is required; seconds (0 to 86400, default 5) is how long the job takes; size
//   (8 to 512, default 64) the image's side in pixels; fail (a text) makes the job fail with it
//   at its end; callback_url is POSTed the finished job (below).
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
// GET /v1/stats → {"submits": {"<Idempotency-Key>": n}, "jobs", "running", "max_running",
//                  "polls": {"<job id>": n}, "callbacks": [{"job", "attempt", "status" | "error"}]}
//
// The callback: when a job with a callback_url ends, the service POSTs the job (as GET
// /v1/jobs/{id} answers it) to that URL, with the submit's Idempotency-Key. A 5xx answer or
// none is tried again (1 s, 2 s, 4 s, … up to 30 s apart, CALLBACK_ATTEMPTS times, default 12,
// about five minutes), so a receiver that restarts meanwhile still gets it; a 4xx is final.
// Only the callback's host is printed: a callback URL may be a capability.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { deflateSync } from 'node:zlib';

const MAX_BODY_BYTES = 64 * 1024;
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

/** A size×size picture for the prompt: a sky from one colour to another, and a sun. */
function render(prompt, size) {
  const h = createHash('sha256').update(prompt).digest();
  const top = [h[0], h[1], h[2]];
  const bottom = [h[3], h[4], h[5]];
  const sun = [255, 200 + (h[6] % 56), 64 + (h[7] % 64)];
  const [cx, cy, r] = [size * (0.25 + (h[8] / 255) * 0.5), size * (0.25 + (h[9] / 255) * 0.3), size * (0.12 + (h[10] / 255) * 0.1)];
  const rows = Buffer.alloc(size * (size * 3 + 1));
  for (let y = 0; y < size; y++) {
    const t = y / Math.max(1, size - 1);
    for (let x = 0; x < size; x++) {
      const inSun = (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
      const rgb = inSun ? sun : top.map((c, i) => Math.round(c + (bottom[i] - c) * t));
      rows.set(rgb, y * (size * 3 + 1) + 1 + x * 3);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8;
  header[9] = 2;
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

// ---------------------------------------------------------------------------------------------
// Jobs

/** id → job; a job's times are in ms since the epoch. */
const jobs = new Map();
/** Idempotency-Key → the job it made. */
const byKey = new Map();
const stats = { submits: {}, jobs: 0, running: 0, max_running: 0, polls: {}, callbacks: [] };

const now = () => Date.now();

/** What a submit may hold: the job's settings, or the reason it cannot be taken. */
function readSubmit(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { error: 'the body must be a JSON object' };
  const { prompt, seconds = 5, size = 64, fail, callback_url: callbackUrl } = body;
  if (typeof prompt !== 'string' || prompt.trim() === '') return { error: 'prompt must be a non-empty string' };
  if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= MAX_SECONDS))
    return { error: `seconds must be a number from 0 to ${MAX_SECONDS}` };
  if (!Number.isInteger(size) || size < 8 || size > 512) return { error: 'size must be a whole number from 8 to 512' };
  if (fail !== undefined && (typeof fail !== 'string' || fail === ''))
    return { error: 'fail must be the error text the job should end with' };
  if (callbackUrl !== undefined) {
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(callbackUrl).protocol);
    } catch {
      ok = false;
    }
    if (!ok) return { error: 'callback_url must be an absolute http(s) URL' };
  }
  return { prompt, ms: Math.round(seconds * 1000), size, fail, callbackUrl };
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
  setTimeout(() => {
    if (job.done) return;
    stats.running += 1;
    stats.max_running = Math.max(stats.max_running, stats.running);
    job.running = true;
  }, job.runs - at).unref();
  setTimeout(() => finish(job), settings.ms).unref();
  return job;
}

function finish(job) {
  if (job.running) stats.running -= 1;
  // A job of no time at all ends before its running timer: it still ran, for an instant.
  else stats.max_running = Math.max(stats.max_running, stats.running + 1);
  job.running = false;
  job.done = true;
  if (job.fail === undefined) {
    job.png = render(job.prompt, job.size);
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
  if (status === 'succeeded') {
    out.output = {
      image_url: `${job.origin}/v1/jobs/${job.id}/image.png`,
      media_type: 'image/png',
      width: job.size,
      height: job.size,
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

const USAGE = 'POST /v1/jobs {"prompt", "seconds"}; GET /v1/jobs/{id}; GET /v1/jobs/{id}/image.png; GET /v1/jobs; GET /v1/stats';

function handle(req, res, text) {
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
      `POST /v1/jobs key=${counted} → 202 ${job.id} (${settings.ms / 1000} s${settings.fail ? ', will fail' : ''}${settings.callbackUrl ? ', calls back' : ''})`,
    );
    return send(res, 202, { id: job.id, status: statusOf(job), url: `${origin}/v1/jobs/${job.id}` });
  }

  if (req.method === 'GET' && path === '/v1/stats') return send(res, 200, stats);
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
  req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
});
server.listen(port, host, () => console.log(`image jobs listening on http://${host}:${server.address().port}`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
