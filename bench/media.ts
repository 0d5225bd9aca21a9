/**
 * Media figures (`npm run bench -- --only media`, and a section of the whole run): executions
 * with a 1 MB PNG in, inline (base64) and through an upload, and with the PNG in and out again
 * (its result read and its link downloaded), against a floor measured in the same run (the same runtime, a pipeline with a small RAW input); downloads of a 1 MB and a
 * 20 MB object through asset links. Each load is a closed loop; the server's RSS is read in its
 * own process (after a collection) before and after, with its peak sampled every 10 ms, so
 * "growth" is what the load left behind and "peak" what it held at most.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { png } from '../test/support/media';
import { PRICES, ASSUMPTIONS } from './prices';
import { fmt, median } from './stats';
import type { Row } from './table';

const MB = 1024 * 1024;
const DURATION_MS = Number(process.env.BENCH_MEDIA_MS) > 0 ? Number(process.env.BENCH_MEDIA_MS) : 5000;

interface Rss {
  rss: number;
  peak: number;
}

class MediaChild {
  private readonly proc: ChildProcess;
  private seq = 0;
  private readonly pending = new Map<number, (x: unknown) => void>();
  readonly ready: Promise<{ url: string; ownerToken: string }>;

  constructor() {
    this.proc = fork(join(__dirname, 'media-server.ts'), [], {
      execArgv: [...process.execArgv, '--expose-gc'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.proc.once('exit', (code) => reject(new Error(`the media server exited (code ${String(code)})`)));
      this.proc.on('message', (m: { type: string; seq?: number; result?: unknown; url?: string; ownerToken?: string }) => {
        if (m.type === 'ready') resolve({ url: String(m.url), ownerToken: String(m.ownerToken) });
        else if (m.type === 'reply' && m.seq !== undefined) {
          this.pending.get(m.seq)?.(m.result);
          this.pending.delete(m.seq);
        }
      });
    });
  }

  private ask<T>(msg: Record<string, unknown>): Promise<T> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.pending.set(seq, (x) => resolve(x as T));
      this.proc.send({ ...msg, seq });
    });
  }

  rss = (): Promise<Rss> => this.ask({ cmd: 'rss' });
  object = (deploymentId: string, bytes: number): Promise<{ url: string }> => this.ask({ cmd: 'object', deploymentId, bytes });
  stop = (): Promise<unknown> => this.ask({ cmd: 'stop' });
}

export async function json(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

export async function publish(
  base: string,
  owner: Record<string, string>,
  id: string,
  def: unknown,
): Promise<{ deploymentId: string; apiKey: string }> {
  const pushed = await json(`${base}/v1/pipelines/${id}`, 'PUT', owner, def);
  if (pushed.status >= 300) throw new Error(`push ${id}: ${JSON.stringify(pushed.body)}`);
  const run = await json(`${base}/v1/pipelines/${id}/runs`, 'POST', { ...owner, prefer: 'wait=20' }, {});
  const runId = String(run.body.run_id);
  for (let i = 0; ; i++) {
    const r = await json(`${base}/v1/pipelines/${id}/runs/${runId}`, 'GET', owner);
    if (r.body.status === 'completed') break;
    if (i > 400 || r.body.status === 'failed') throw new Error(`run of ${id}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 20));
  }
  const pub = await json(`${base}/v1/pipelines/${id}/deployment`, 'PUT', owner, {});
  if (pub.status !== 201) throw new Error(`publish ${id}: ${JSON.stringify(pub.body)}`);
  return { deploymentId: String(pub.body.deployment_id), apiKey: String(pub.body.api_key) };
}

/** Posts an execution and polls its status every 10 ms until it is over; answers its id. */
async function execute(base: string, d: { deploymentId: string; apiKey: string }, workflow_input: unknown): Promise<string> {
  const key = { 'x-api-key': d.apiKey };
  const r = await json(`${base}/v1/deployments/${d.deploymentId}/executions`, 'POST', key, { workflow_input });
  if (r.status >= 300) throw new Error(`execute answered ${r.status}: ${JSON.stringify(r.body)}`);
  let status = String(r.body.status ?? '');
  const id = String(r.body.execution_id);
  while (status !== 'completed') {
    if (status === 'failed' || status === 'cancelled') throw new Error(`execution ${id} ${status}`);
    await new Promise((res) => setTimeout(res, 10));
    status = String((await json(`${base}/v1/deployments/executions/${id}/status`, 'GET', key)).body.status ?? '');
  }
  return id;
}

interface Load {
  perSecond: number;
  p50Ms: number;
  done: number;
  bytes: number;
  rssBefore: number;
  rssAfter: number;
  peak: number;
}

async function closedLoop(child: MediaChild, concurrency: number, one: () => Promise<number>): Promise<Load> {
  await one(); // warm
  const before = await child.rss();
  const latencies: number[] = [];
  let bytes = 0;
  const started = performance.now();
  const until = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        bytes += await one();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = await child.rss();
  return {
    perSecond: latencies.length / seconds,
    p50Ms: median(latencies),
    done: latencies.length,
    bytes: bytes / seconds,
    rssBefore: before.rss,
    rssAfter: after.rss,
    peak: after.peak,
  };
}

/** Reads a download to its end without keeping it: the client holds one chunk at a time. */
async function download(url: string): Promise<number> {
  const res = await fetch(url);
  if (res.status !== 200 || !res.body) throw new Error(`download answered ${res.status}`);
  let n = 0;
  for await (const chunk of res.body) n += (chunk as Uint8Array).length;
  return n;
}

export interface MediaFigures {
  floor: Load;
  inline: Load;
  upload: Load;
  /** In inline, out as an ASSET output: the result read and its link downloaded whole. */
  roundTrip: Load;
  downloads: { size: number; concurrency: number; load: Load }[];
  imageBytes: number;
}

export async function measureMedia(log: (m: string) => void): Promise<MediaFigures> {
  const child = new MediaChild();
  try {
    const { url: base, ownerToken } = await child.ready;
    const owner = { authorization: `Bearer ${ownerToken}` };
    const raw = await publish(base, owner, 'bench-raw', {
      nodes: { name: { type: 'input', value_type: 'string', value: 'x' }, out: { type: 'output', from: 'name' } },
    });
    const photo = await publish(base, owner, 'bench-photo', {
      nodes: {
        photo: {
          type: 'input',
          value_type: 'asset',
          value: `data:image/png;base64,${png(1, 1).toString('base64')}`,
          media_types: ['image/png'],
          max_bytes: 2 * MB,
        },
        about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes)" },
        out: { type: 'output', from: 'about' },
      },
    });
    const echo = await publish(base, owner, 'bench-photo-out', {
      nodes: {
        photo: {
          type: 'input',
          value_type: 'asset',
          value: `data:image/png;base64,${png(1, 1).toString('base64')}`,
          media_types: ['image/png'],
          max_bytes: 2 * MB,
        },
        copy: { type: 'output', from: 'photo' },
      },
    });
    const noise = randomBytes(512 * 512 * 4);
    const image = png(512, 512, (x, y) => {
      const at = (y * 512 + x) * 4;
      return [noise[at] ?? 0, noise[at + 1] ?? 0, noise[at + 2] ?? 0, 255];
    });
    const base64 = image.toString('base64');

    log('media: floor (small RAW input), closed loop ×4');
    const floor = await closedLoop(child, 4, async () => {
      await execute(base, raw, { name: { value: 'bench', value_type: 'RAW' } });
      return 0;
    });
    log('media: 1 MB PNG inline, closed loop ×4');
    const inline = await closedLoop(child, 4, async () => {
      await execute(base, photo, { photo: { value: base64, value_type: 'ASSET' } });
      return image.length;
    });
    log('media: 1 MB PNG through an upload, closed loop ×4');
    const upload = await closedLoop(child, 4, async () => {
      const created = await json(
        `${base}/v1/deployments/${photo.deploymentId}/uploads`,
        'POST',
        { 'x-api-key': photo.apiKey },
        { media_type: 'image/png', bytes: image.length },
      );
      if (created.status !== 201) throw new Error(`upload answered ${created.status}`);
      const put = await fetch(String(created.body.upload_url), {
        method: 'PUT',
        headers: created.body.headers as Record<string, string>,
        body: image,
      });
      if (put.status !== 200) throw new Error(`PUT answered ${put.status}`);
      await execute(base, photo, { photo: created.body.asset });
      return image.length;
    });
    log('media: 1 MB PNG in and out (result read, link downloaded), closed loop ×4');
    const roundTrip = await closedLoop(child, 4, async () => {
      const id = await execute(base, echo, { photo: { value: base64, value_type: 'ASSET' } });
      const result = await json(`${base}/v1/deployments/executions/${id}/result`, 'GET', { 'x-api-key': echo.apiKey });
      const link = (result.body.response_data as Record<string, { value?: string }> | undefined)?.copy?.value;
      if (!link) throw new Error(`no link in the result: ${JSON.stringify(result.body)}`);
      const got = await download(link);
      if (got !== image.length) throw new Error(`downloaded ${got} bytes of ${image.length}`);
      return 2 * image.length;
    });
    const downloads: MediaFigures['downloads'] = [];
    for (const [size, concurrency] of [
      [1 * MB, 4],
      [20 * MB, 2],
    ] as const) {
      log(`media: downloads of ${size / MB} MB through a link, closed loop ×${concurrency}`);
      const { url } = await child.object(photo.deploymentId, size);
      downloads.push({ size, concurrency, load: await closedLoop(child, concurrency, () => download(url)) });
    }
    return { floor, inline, upload, roundTrip, downloads, imageBytes: image.length };
  } finally {
    await child.stop().catch(() => undefined);
  }
}

const mb = (bytes: number) => `${fmt(bytes / MB, 1)} MB`;

/**
 * A download's cost on AWS, per million, from list prices (bench/prices.ts) and what AWS
 * documents for streamed answers: API Gateway bills each started 10 MB of a streamed answer as
 * a request; past its first 10 MB it passes 2 MB/s, so the function streams at least that long;
 * Lambda bills the bytes a function streams past its first 6 MB.
 */
export function downloadCost(size: number, localSeconds: number): { lines: [string, number][]; total: number } {
  const m = 1e6;
  const gb = size / 1024 ** 3;
  const throttled = size > 10 * MB ? (size - 10 * MB) / (2 * MB) : 0;
  const seconds = Math.max(localSeconds, throttled);
  const lines: [string, number][] = [
    [
      `API Gateway REST, ${Math.ceil(size / (10 * MB))} request(s) (one per started 10 MB streamed)`,
      Math.ceil(size / (10 * MB)) * PRICES.apiGatewayRestPerMillion,
    ],
    ['Lambda request', PRICES.lambdaPerMillionRequests],
    [
      `Lambda duration, ${ASSUMPTIONS.lambdaMemoryMb} MB × ${fmt(seconds, 2)} s`,
      (ASSUMPTIONS.lambdaMemoryMb / 1024) * seconds * PRICES.lambdaArmPerGbSecond * m,
    ],
    ['Lambda bytes streamed past the first 6 MB', (Math.max(0, size - 6 * MB) / 1024 ** 3) * PRICES.lambdaStreamedPerGb * m],
    ['DynamoDB, 1 strongly consistent read', PRICES.dynamoPerMillionReadUnits],
    ['S3 GET', PRICES.s3PerMillionGets],
    ['transfer out to the internet', gb * PRICES.transferOutPerGb * m],
  ];
  return { lines, total: lines.reduce((s, [, d]) => s + d, 0) };
}

export function mediaRows(f: MediaFigures): Row[] {
  const rows: Row[] = [
    [
      `— media: closed loops of ${DURATION_MS / 1000} s on the local runtime; server RSS in its own process (floor: the same runtime, small RAW input)`,
      '',
      '',
      '',
      '',
      '',
    ],
  ];
  const rss = (l: Load) => `RSS ${mb(l.rssBefore)} → ${mb(l.rssAfter)}, peak ${mb(l.peak)}`;
  const growth = (l: Load) => `${mb(l.rssAfter - l.rssBefore)} left, ${mb(l.peak - l.rssBefore)} at peak`;
  rows.push(['executions/s, small RAW input ×4 (floor)', `${fmt(f.floor.perSecond, 1)}/s`, `p50 ${fmt(f.floor.p50Ms)} ms`, '', '', '']);
  rows.push(['  server RSS growth', growth(f.floor), rss(f.floor), '', '', '']);
  for (const [label, l] of [
    [`executions/s, ${mb(f.imageBytes)} PNG inline (base64) ×4`, f.inline],
    [`executions/s, ${mb(f.imageBytes)} PNG through an upload ×4`, f.upload],
    [`executions/s, ${mb(f.imageBytes)} PNG in (inline) and out (result + download) ×4`, f.roundTrip],
  ] as const) {
    rows.push([
      label,
      `${fmt(l.perSecond, 1)}/s`,
      `floor ${fmt(f.floor.perSecond, 1)}/s, p50 ${fmt(l.p50Ms)} ms`,
      `×${fmt(l.perSecond / f.floor.perSecond, 2)}`,
      '',
      '',
    ]);
    rows.push(['  server RSS growth', growth(l), rss(l), '', '', '']);
  }
  for (const d of f.downloads) {
    const cost = downloadCost(d.size, d.load.p50Ms / 1000 / d.concurrency);
    rows.push([
      `downloads of ${mb(d.size)} through a link ×${d.concurrency}`,
      `${fmt(d.load.perSecond, 1)}/s`,
      `${mb(d.load.bytes)}/s, p50 ${fmt(d.load.p50Ms)} ms`,
      '',
      '',
      '',
    ]);
    rows.push(['  server RSS growth', growth(d.load), rss(d.load), '', '', '']);
    rows.push([
      `  cost per million downloads on AWS`,
      `$${fmt(cost.total, 2)}`,
      "list prices; duration: this run's time per download or API Gateway's 2 MB/s past 10 MB, the longer",
      '',
      '',
      '',
    ]);
    for (const [item, dollars] of cost.lines) rows.push([`    ${item}`, `$${fmt(dollars, 2)}`, '', '', '', '']);
  }
  return rows;
}
