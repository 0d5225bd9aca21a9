/**
 * A web form in a real browser (Chromium from Debian's packages, driven by playwright-core; the
 * test skips, loudly, without it), on a phone-sized viewport: a person with only the link fills
 * the form, attaches a picture, runs it, and sees the text and the picture; no console errors;
 * axe-core finds no serious or critical violation; a tampered link shows a page a person can read and nothing of the form; disabling the
 * form takes the open page's link down at once. Prints the page's bytes and time to interactive
 * (docs/performance.md) and saves screenshots (docs/form-page.png is one). Runs against the
 * local runtime, and against start:synth in test/e2e/synth/form-page.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import type { PipelineDefinition } from '../../functions/core/types';
import { png } from '../support/media';
import { e2eMode, request, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const CHROMIUM = process.env.PIPEGATE_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  console.warn(
    `\n*** SKIPPING the web form browser test: no Chromium at ${CHROMIUM}. ***\n` +
      '*** Install it with: apt-get install -y chromium (or set PIPEGATE_CHROMIUM) ***\n',
  );
}
const browserIt = haveChromium ? it : it.skip;

/** Where the screenshots go; PIPEGATE_SCREENSHOTS=docs writes docs/form-page.png for the README. */
const SCRATCH = join(__dirname, '../../.screenshots');
const SHOTS = process.env.PIPEGATE_SCREENSHOTS === 'docs' ? join(__dirname, '../../docs') : SCRATCH;

// The postcard example as a newcomer pushes it, plus a hidden input and output that must never show.
const example = JSON.parse(readFileSync(join(__dirname, '../../examples/postcard.json'), 'utf8')) as PipelineDefinition;
const postcard: PipelineDefinition = {
  ...example,
  nodes: {
    ...example.nodes,
    signature: { type: 'input', value_type: 'string', value: 'HIDDEN-SIGNATURE' },
    signed: { type: 'output', from: 'signature' },
  },
};

let rt: E2eRuntime;
let pub: Published;
let formUrl: string;
let browser: Browser | undefined;
// A picture a person would pick: big enough to see in the screenshot.
const picture = png(96, 64, (x, y) => [40 + x * 2, 120 + y, 200 - x, 255]);

beforeAll(async () => {
  // Under start:synth as deployed without a public URL: the upload-cors resource gives the bucket
  // the API's own origin (the local one), so files still go straight to storage.
  // Every test here runs from one address within a minute, each run, upload and stream counting
  // against that address's web form limit (10 a minute by default): the limit is raised, so
  // that adding a test never refuses another's run. The limits themselves are tested in
  // test/e2e/forms.test.ts.
  rt = await startE2eRuntime({ env: { PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE: '100' } });
  pub = await rt.publishPipeline('postcard', postcard, {
    inputs: { signature: { visible: false } },
    outputs: { signed: { visible: false } },
    form: { enabled: true, title: 'Make a postcard', description: 'Pick a picture and say where it is from.' },
  });
  formUrl = pub.body.form_url as string;
  if (haveChromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }
  mkdirSync(SCRATCH, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await rt?.cleanup();
});

interface Seen {
  text: string;
  outputsHidden: boolean;
}

/** Records, in the page, every text the status line shows as it changes, and whether the outputs were hidden then. */
async function watchProgress(page: Page): Promise<void> {
  await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null; hidden: boolean } } })
      .document;
    const seen: { text: string; outputsHidden: boolean }[] = [];
    (globalThis as unknown as { seen: typeof seen }).seen = seen;
    const target = doc.getElementById('progress');
    const outputs = doc.getElementById('outputs');
    // From the records, not the element: events dispatched in one go still leave one record each.
    type Records = { addedNodes: { textContent: string | null }[] }[];
    const Observer = (
      globalThis as unknown as { MutationObserver: new (cb: (r: Records) => void) => { observe(t: unknown, o: unknown): void } }
    ).MutationObserver;
    new Observer((records) => {
      for (const r of records)
        for (const n of Array.from(r.addedNodes)) seen.push({ text: n.textContent ?? '', outputsHidden: outputs.hidden });
    }).observe(target, { childList: true });
  });
}
const seenProgress = (page: Page): Promise<Seen[]> => page.evaluate(() => (globalThis as unknown as { seen: Seen[] }).seen);

/**
 * A published pipeline with a form, four nodes long (word → pause → loud → said), whose delay
 * leaves time to watch its progress: the form's link.
 */
async function slowForm(id: string, word: string, pauseMs: number): Promise<string> {
  const slow: PipelineDefinition = {
    nodes: {
      word: { type: 'input', value_type: 'string', value: word },
      pause: { type: 'delay', inputs: ['word'], ms: pauseMs },
      loud: { type: 'transform', inputs: ['pause'], expression: '$uppercase(pause)' },
      said: { type: 'output', from: 'loud' },
    },
  };
  const p = await rt.publishPipeline(id, slow, { form: { enabled: true } });
  return p.body.form_url as string;
}

/** Opens a slowForm's page, watches its progress line and runs it: the `said` output it shows. */
async function runWatched(page: Page, url: string): Promise<string> {
  await page.goto(url);
  await page.locator('#run').waitFor();
  await watchProgress(page);
  await page.getByRole('button', { name: 'Run' }).click();
  const text = page.locator('[data-output="said"] .value');
  return waitUntil(
    () => text.innerText(),
    (t) => t.length > 0,
    HANG_MS,
    100,
  );
}

/** A phone: 390 × 844 CSS pixels, touch, as a person opening the link on one. */
async function phonePage(opts: { bypassCSP?: boolean } = {}): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
  const context = await (browser as Browser).newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    ...opts,
  });
  const page = await context.newPage();
  // Actions and navigations wait for their condition: only a hang reaches the limit.
  page.setDefaultTimeout(HANG_MS);
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { page, problems, close: () => context.close() };
}

/** Every visible control and link smaller than a fingertip (44 × 44 CSS pixels, WCAG 2.5.5). */
const SMALL_TARGETS = `(() => {
  const small = [];
  for (const e of document.querySelectorAll('input, button, a, textarea, select')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.width < 44 || r.height < 44) small.push((e.id || e.tagName) + ' ' + Math.round(r.width) + 'x' + Math.round(r.height));
  }
  return small;
})()`;

/**
 * axe-core's serious and critical violations of the page as it stands. axe is evaluated through
 * the browser's debugging protocol, which the page's CSP does not govern: the page keeps its CSP.
 */
async function axeViolations(page: Page): Promise<{ id: string; impact: string | null; help: string; nodes: string[] }[]> {
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const found = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: () => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }>;
        };
      }
    ).axe;
    const r = await axe.run();
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** The page's own words: its text as a person reads it. */
const pageText = (page: Page): Promise<string> => page.locator('body').innerText();

/** Fills the postcard as a person would and runs it: the back's text once shown. */
async function fillAndRun(page: Page, place: string): Promise<string> {
  await page.getByLabel('Place', { exact: true }).fill(place);
  await page.getByLabel('Number of copies', { exact: true }).fill('3');
  await page.setInputFiles('#in-photo', { name: 'beach.png', mimeType: 'image/png', buffer: picture });
  await page.getByRole('button', { name: 'Run' }).click();
  const text = page.locator('[data-output="back"] .value');
  return waitUntil(
    () => text.innerText(),
    (t) => t.includes(place),
    HANG_MS,
    100,
  );
}

describe('the web form in a browser', () => {
  browserIt(
    'a person with only the link runs it from a phone: labels, plain words, fingertip-sized controls, the text, the picture, a link and a named download',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        // The page's own bytes: the HTML, its script and its style sheet (uncompressed; the runtime does not compress).
        let bytes = 0;
        page.on('response', (r) => {
          if (r.url() === formUrl || r.url().startsWith(`${formUrl}/files/`))
            void r.body().then(
              (b) => (bytes += b.length),
              () => undefined,
            );
        });
        const opened = await page.goto(formUrl);
        expect(opened?.status()).toBe(200);
        await page.locator('#run').waitFor();
        const timing = await page.evaluate(() => {
          // Runs in the page: the browser's Performance API (this project compiles without DOM types).
          const perf = (
            globalThis as unknown as { performance: { getEntriesByType(t: string): { domInteractive: number; loadEventEnd: number }[] } }
          ).performance;
          const nav = perf.getEntriesByType('navigation')[0] ?? { domInteractive: NaN, loadEventEnd: NaN };
          return { interactive: nav.domInteractive, loaded: nav.loadEventEnd };
        });

        // Labelled controls from the definition's labels; the hidden input is nowhere.
        await expect(page.getByLabel('Greeting', { exact: true }).inputValue()).resolves.toBe('Greetings from');
        await expect(page.getByLabel('Number of copies', { exact: true }).inputValue()).resolves.toBe('1');
        expect(await page.content()).not.toContain('HIDDEN-SIGNATURE');
        expect(await page.locator('text=A photo of the place').count()).toBe(1);
        // Kinds and sizes as people say them: no media type, no byte count, no binary unit.
        const words = await pageText(page);
        expect(words).toContain('A PNG or JPEG image, 10 MB or smaller.');
        expect(words).not.toMatch(/image\/|MiB|\d bytes|accepts|published/);
        expect(await page.evaluate(SMALL_TARGETS)).toEqual([]);

        await page.getByLabel('Place', { exact: true }).fill('Brighton');
        await page.setInputFiles('#in-photo', { name: 'beach.png', mimeType: 'image/png', buffer: picture });
        await page.screenshot({ path: join(SCRATCH, 'form-page-filled.png'), fullPage: true });
        expect(await fillAndRun(page, 'Brighton')).toBe('Greetings from Brighton (3 copies)');

        const img = page.locator('[data-output="front"] img');
        const width = await waitUntil(
          () => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth).catch(() => 0),
          (w) => w > 0,
          HANG_MS,
          100,
        );
        expect(width).toBe(96);
        expect(await img.getAttribute('alt')).toBe('Front of the card');
        // A web address as a link; a file as a download named after its output, with its kind's extension.
        const more = page.locator('[data-output="more"] a');
        expect(await more.getAttribute('href')).toBe('https://example.com/places/the-sea');
        const download = page.locator('[data-output="front"] a.download');
        expect(await download.getAttribute('download')).toBe('front.png');
        expect(await download.innerText()).toMatch(/^Download front\.png \(\d+(\.\d)? KB\)$/);
        const served = await page.evaluate(
          async (href) => (await fetch(href)).headers.get('content-disposition'),
          (await download.getAttribute('href')) as string,
        );
        expect(served).toBe('inline; filename="front.png"');
        expect(await page.locator('[data-output="signed"]').count()).toBe(0);
        expect(await page.locator('#progress').innerText()).toMatch(/^Done in (under a second|\d+(\.\d)? seconds)\.$/);
        expect(await page.evaluate(SMALL_TARGETS)).toEqual([]);
        expect(await axeViolations(page)).toEqual([]);
        await page.screenshot({ path: join(SHOTS, 'form-page.png'), fullPage: true });

        expect(problems).toEqual([]);
        console.log(
          `web form page: ${bytes} bytes for the page, its script and style sheet; ` +
            `DOM interactive ${timing.interactive.toFixed(0)} ms, load ${timing.loaded.toFixed(0)} ms after navigation start (${e2eMode() === 'local' ? 'local runtime' : 'start:synth'}, loopback)`,
        );
        writeFileSync(join(SCRATCH, 'form-page-figures.json'), JSON.stringify({ bytes, ...timing }, null, 2));
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'the same on a desktop screen, and axe-core finds no serious or critical violation there either',
    async () => {
      const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      try {
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        expect(await axeViolations(page)).toEqual([]);
        expect(await fillAndRun(page, 'Hove')).toBe('Greetings from Hove (3 copies)');
        await page
          .locator('[data-output="front"] img')
          .evaluate((el) => (el as unknown as { decode(): Promise<void> }).decode())
          .catch(() => undefined);
        expect(await axeViolations(page)).toEqual([]);
        await page.screenshot({ path: join(SHOTS, 'form-page-desktop.png'), fullPage: true });
      } finally {
        await context.close();
      }
    },
    120_000,
  );

  browserIt(
    'checks what a person typed before sending: each problem at its field in plain words, all in a summary at the top that takes the focus',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const posts: string[] = [];
        page.on('request', (r) => {
          if (r.method() === 'POST' || r.method() === 'PUT') posts.push(r.url());
        });
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        await page.getByLabel('Number of copies', { exact: true }).fill('two');
        await page.getByLabel('Web page about the place', { exact: true }).fill('the seaside');
        await page.setInputFiles('#in-photo', { name: 'party.gif', mimeType: 'image/gif', buffer: Buffer.from('GIF89a') });
        await page.getByRole('button', { name: 'Run' }).click();

        const summary = page.locator('#error-summary');
        await summary.waitFor({ state: 'visible' });
        expect(await page.locator('#error-list li').allInnerTexts()).toEqual([
          'Picture for the front must be a PNG or JPEG image; party.gif is a GIF image',
          'Number of copies must be a whole number, like 3',
          'Web page about the place must be a web address starting with https://, like https://example.com/page',
        ]);
        expect(await page.locator('#in-copies-error').textContent()).toBe('Error: Number of copies must be a whole number, like 3');
        expect(await page.getByLabel('Number of copies', { exact: true }).getAttribute('aria-invalid')).toBe('true');
        expect(await page.getByLabel('Number of copies', { exact: true }).getAttribute('aria-describedby')).toContain('in-copies-error');
        expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('error-summary');
        expect(posts).toEqual([]);
        await page.screenshot({ path: join(SCRATCH, 'form-page-errors.png'), fullPage: true });
        expect(await page.evaluate(SMALL_TARGETS)).toEqual([]);
        expect(await axeViolations(page)).toEqual([]);

        // The summary's link takes the person to the field.
        await page.locator('#error-list a', { hasText: 'Number of copies' }).click();
        expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('in-copies');

        // Put right, the problems go and the run goes through.
        await page.getByLabel('Number of copies', { exact: true }).fill('2');
        await page.getByLabel('Web page about the place', { exact: true }).fill('https://example.com/brighton');
        await page.setInputFiles('#in-photo', { name: 'beach.png', mimeType: 'image/png', buffer: picture });
        await page.getByRole('button', { name: 'Run' }).click();
        const more = page.locator('[data-output="more"] a');
        await more.waitFor({ timeout: 60_000 });
        expect(await more.getAttribute('href')).toBe('https://example.com/brighton');
        expect(await summary.isHidden()).toBe(true);
        expect(await page.locator('.field-error').count()).toBe(0);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'checks a file too large for its input in the page, before a byte is sent, in sizes as people write them',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const sent: string[] = [];
        page.on('request', (r) => {
          if (r.method() === 'POST' || r.method() === 'PUT') sent.push(r.url());
        });
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        // The postcard's picture takes at most 10,000,000 bytes: one more.
        await page.setInputFiles('#in-photo', { name: 'huge.png', mimeType: 'image/png', buffer: Buffer.alloc(10_000_001, 1) });
        await page.getByRole('button', { name: 'Run' }).click();
        const error = page.locator('#in-photo-error');
        await error.waitFor({ state: 'visible' });
        expect(await error.textContent()).toBe('Error: Picture for the front must be 10 MB or smaller; huge.png is 10.1 MB');
        expect(await page.locator('#error-list li').allInnerTexts()).toEqual([
          'Picture for the front must be 10 MB or smaller; huge.png is 10.1 MB',
        ]);
        expect(sent).toEqual([]);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    "a refusal only the service can make (the file's bytes are not a picture) is said at its field, in the page's words",
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        // Named and typed as a PNG by the browser, but its bytes are text: only sniffing tells.
        await page.setInputFiles('#in-photo', { name: 'holiday.png', mimeType: 'image/png', buffer: Buffer.from('not a picture at all') });
        await page.getByRole('button', { name: 'Run' }).click();
        const error = page.locator('#in-photo-error');
        await error.waitFor({ state: 'visible', timeout: 60_000 });
        expect(await error.textContent()).toBe('Error: Picture for the front must be a PNG or JPEG image; the file you chose is not one');
        expect(await page.locator('#error-list li').allInnerTexts()).toEqual([
          'Picture for the front must be a PNG or JPEG image; the file you chose is not one',
        ]);
        expect(await page.locator('#failure').isHidden()).toBe(true);
        expect(await page.locator('#run').isDisabled()).toBe(false);
        // The refused request is the browser's own console line, nothing the page threw.
        expect(problems.filter((m) => !/status of 422/.test(m))).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'a picture larger than the inline limit goes straight to storage, with its progress shown, and comes back',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        // Noise does not compress: 1,400 × 1,000 RGBA is about 4.8 MB, past the 4 MiB a run takes inline.
        const noise = randomBytes(1400 * 1000 * 3);
        const big = png(1400, 1000, (x, y) => [
          noise[(y * 1400 + x) * 3] ?? 0,
          noise[(y * 1400 + x) * 3 + 1] ?? 0,
          noise[(y * 1400 + x) * 3 + 2] ?? 0,
          255,
        ]);
        expect(big.length).toBeGreaterThan(INLINE_ASSET_BODY_MAX_BYTES);
        const puts: { url: string; bytes: number }[] = [];
        page.on('request', (r) => {
          if (r.method() === 'PUT')
            puts.push({ url: r.url(), bytes: Number(r.headers()['content-length'] ?? r.postDataBuffer()?.length ?? 0) });
        });
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        expect(await page.locator('#pipegate-form').getAttribute('data-uploads')).toBe('direct');
        // Every text the status line shows, as it changes.
        await page.evaluate(() => {
          const doc = (globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null } } }).document;
          const seen: string[] = [];
          (globalThis as unknown as { seen: string[] }).seen = seen;
          const target = doc.getElementById('progress');
          const Observer = (
            globalThis as unknown as { MutationObserver: new (cb: () => void) => { observe(t: unknown, o: unknown): void } }
          ).MutationObserver;
          new Observer(() => seen.push(target.textContent ?? '')).observe(target, { childList: true, characterData: true, subtree: true });
        });
        await page.setInputFiles('#in-photo', { name: 'noise.png', mimeType: 'image/png', buffer: big });
        await page.getByRole('button', { name: 'Run' }).click();
        const img = page.locator('[data-output="front"] img');
        const width = await waitUntil(
          () => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth).catch(() => 0),
          (w) => w > 0,
          HANG_MS,
          100,
        );
        expect(width).toBe(1400);
        // One PUT, of the whole file, not to this service but to storage.
        expect(puts).toHaveLength(1);
        expect(puts[0]?.url.startsWith(rt.url)).toBe(false);
        const seen = await page.evaluate(() => (globalThis as unknown as { seen: string[] }).seen);
        expect(seen.some((t) => /^Uploading noise\.png… \d+%$/.test(t))).toBe(true);
        const back = await page.evaluate(
          async (src) => (await (await fetch(src)).arrayBuffer()).byteLength,
          (await img.getAttribute('src')) as string,
        );
        expect(back).toBe(big.length);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'follows the run by its event stream: progress node by node, then the result, with no poll',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const url = await slowForm('slow-stream', 'later', 1500);
        const asked: string[] = [];
        page.on('request', (r) => {
          if (r.method() === 'GET' && r.url().startsWith(`${url}/executions/`)) asked.push(r.url().slice(url.length));
        });
        expect(await runWatched(page, url)).toBe('LATER');
        // Through the stream only: the run's events, and not one long poll.
        expect(asked.filter((u) => u.endsWith('/events'))).toHaveLength(1);
        expect(asked.filter((u) => !u.endsWith('/events'))).toEqual([]);
        // Each node's progress was on the page while the outputs were still hidden, before the result.
        const seen = await seenProgress(page);
        const running = seen.findIndex((s) => s.text === 'Step 1 of 2: Pause');
        const finished = seen.findIndex((s) => s.text === 'Step 2 of 2 done: Loud');
        const done = seen.findIndex((s) => /^Done in/.test(s.text));
        expect(running).toBeGreaterThanOrEqual(0);
        expect(finished).toBeGreaterThan(running);
        expect(done).toBeGreaterThan(finished);
        expect(seen.slice(0, done).every((s) => s.outputsHidden)).toBe(true);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'counts each node once when a run after a crash finishes it again',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const url = await slowForm('rerun-stream', 'again', 500);
        // The first stream is what a reader sees of a run interrupted after pause and run again
        // from the start: pause finishes twice. Its events carry no ids, so the reconnect that
        // follows its end reads the real stream from the start, which finishes pause once more.
        const node = (state: string, id: string) =>
          `event: node\ndata: ${JSON.stringify({ node_id: id, type: id === 'word' ? 'input' : 'delay', state, at: new Date().toISOString() })}\n\n`;
        let streams = 0;
        await page.route('**/events', (route) => {
          streams += 1;
          if (streams > 1) return route.continue();
          const body = `retry: 200\n\n${node('finished', 'word')}${node('started', 'pause')}${node('finished', 'pause')}${node('finished', 'word')}${node('started', 'pause')}${node('finished', 'pause')}`;
          return route.fulfill({ status: 200, contentType: 'text/event-stream', body });
        });
        expect(await runWatched(page, url)).toBe('AGAIN');
        const seen = (await seenProgress(page)).map((s) => s.text);
        // Two steps, each keeping its number, however often the streams said it started or finished.
        expect(seen).toContain('Step 1 of 2 done: Pause');
        expect(seen).toContain('Step 2 of 2: Loud');
        expect(seen).toContain('Step 2 of 2 done: Loud');
        expect(seen.filter((t) => /^Step ([3-9]|\d\d+)/.test(t))).toEqual([]);
        expect(streams).toBeGreaterThanOrEqual(2);
        expect(problems.filter((m) => !/EventSource|event-stream/i.test(m))).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'falls back to the long poll when the event stream fails, and still ends with the result',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        // As a proxy that refuses or breaks the stream would.
        const refused: string[] = [];
        await page.route('**/events', (route) => {
          refused.push(route.request().url());
          return route.fulfill({ status: 503, contentType: 'application/json', body: '{"error":"Service Unavailable"}' });
        });
        const polls: string[] = [];
        page.on('request', (r) => {
          if (r.method() === 'GET' && r.url().startsWith(`${formUrl}/executions/`) && !r.url().endsWith('/events'))
            polls.push(r.headers().prefer ?? '');
        });
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        await page.getByLabel('Place', { exact: true }).fill('Hove');
        await page.getByRole('button', { name: 'Run' }).click();
        const text = page.locator('[data-output="back"] .value');
        await waitUntil(
          () => text.innerText(),
          (t) => t.includes('Hove'),
          HANG_MS,
          100,
        );
        expect(refused).toHaveLength(1);
        expect(polls.length).toBeGreaterThanOrEqual(1);
        expect(polls.every((p) => /^wait=\d+$/.test(p))).toBe(true);
        expect(await page.locator('#progress').innerText()).toMatch(/^Done in/);
        // The refused stream is the browser's own console line, nothing the page threw.
        expect(problems.filter((m) => !/503|EventSource|event-stream/i.test(m))).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'a tampered link shows a page a person can read, and nothing of the form',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const tampered = formUrl.slice(0, -2) + (formUrl.endsWith('AA') ? 'BB' : 'AA');
        const r = await page.goto(tampered);
        expect(r?.status()).toBe(404);
        expect(r?.headers()['content-type']).toBe('text/html; charset=utf-8');
        expect(await page.locator('h1').innerText()).toBe('This link does not open a form');
        expect(await pageText(page)).toContain('ask whoever sent it for a new link');
        const body = await page.content();
        expect(body).not.toContain('postcard');
        expect(body).not.toContain('Make a postcard');
        expect(body).not.toContain('Form Not Found');
        expect(await axeViolations(page)).toEqual([]);
        // Its style block is allowed by its hash: nothing refused by the CSP (the one line is the 404 itself).
        expect(problems.filter((m) => !/status of 404/.test(m))).toEqual([]);
        await page.screenshot({ path: join(SCRATCH, 'form-not-found.png'), fullPage: true });
      } finally {
        await close();
      }
    },
    60_000,
  );

  browserIt(
    'disabling the form takes an open page down at once: its next run says so',
    async () => {
      const { page, close } = await phonePage();
      try {
        await page.goto(formUrl);
        await page.locator('#run').waitFor();
        const off = await rt.owner('PUT', '/v1/pipelines/postcard/deployment', { form: { enabled: false } });
        expect(off.status).toBe(200);
        await page.getByRole('button', { name: 'Run' }).click();
        const failure = page.locator('#failure');
        await waitUntil(
          () => failure.innerText(),
          (t) => t.length > 0,
          HANG_MS,
          100,
        );
        expect(await failure.innerText()).toBe('This form is no longer available.');
        expect((await page.reload())?.status()).toBe(404);
        await rt.owner('PUT', '/v1/pipelines/postcard/deployment', { form: { enabled: true } });
        expect((await page.reload())?.status()).toBe(200);
      } finally {
        await close();
      }
    },
    60_000,
  );

  browserIt(
    'a run that waits for the person shows its wait as a form of its own: plain words, problems at their fields, the answer sent, the result shown; axe finds nothing',
    async () => {
      const { page, problems, close } = await phonePage();
      try {
        const approve = {
          nodes: {
            word: { type: 'input', value_type: 'string', value: 'tulips' },
            approval: {
              type: 'wait',
              inputs: ['word'],
              timeout_ms: 600_000,
              label: 'Approve the order',
              description: 'Say whether the order may go out.',
              fields: {
                approved: { value_type: 'boolean', label: 'Approve' },
                stars: { value_type: 'integer', label: 'Stars' },
                note: { value_type: 'string', label: 'Note for the florist' },
              },
            },
            said: {
              type: 'transform',
              inputs: ['word', 'approval'],
              expression: "word & ': ' & (approval.approved ? 'approved' : 'refused') & ', ' & approval.stars & ' stars, ' & approval.note",
            },
            verdict: { type: 'output', from: 'said', label: 'Verdict' },
          },
        } as unknown as PipelineDefinition;
        // Publishing needs a run that succeeded: the owner answers its wait.
        expect((await rt.owner('PUT', '/v1/pipelines/approve-form', approve)).status).toBe(201);
        const run = await rt.owner('POST', '/v1/pipelines/approve-form/runs', {});
        const path = `/v1/pipelines/approve-form/runs/${String(run.body.run_id)}`;
        const view = await waitUntil(
          () => rt.owner('GET', path),
          (r) => Array.isArray(r.body.waiting),
        );
        const ownerUrl = (view.body.waiting as { resume_url: string }[])[0]?.resume_url ?? '';
        expect((await request(ownerUrl, 'POST', { approved: true, stars: 5, note: 'x' }, {})).status).toBe(202);
        await waitUntil(
          () => rt.owner('GET', path),
          (r) => r.body.status === 'completed',
        );
        const pub = await rt.owner('PUT', '/v1/pipelines/approve-form/deployment', { form: { enabled: true, title: 'Order flowers' } });

        await page.goto(pub.body.form_url as string);
        const section = page.locator('#wait-approval');
        expect(await section.isHidden()).toBe(true);
        await page.getByRole('button', { name: 'Run' }).click();
        await section.waitFor({ state: 'visible' });
        const seenWhileWaiting = await pageText(page);
        const progressWhileWaiting = await page.locator('#progress').innerText();
        const violations = await axeViolations(page);
        await page.screenshot({ path: join(SHOTS, 'form-page-wait.png'), fullPage: true });
        // A whole number left empty: said at its field and in the summary.
        await section.getByRole('button', { name: 'Send' }).click();
        const starsError = await page.locator('#wait-approval-in-stars-error').innerText();
        const summary = await page.locator('#error-list').innerText();
        await section.getByLabel('Approve', { exact: true }).check();
        await section.getByLabel('Stars', { exact: true }).fill('4');
        await section.getByLabel('Note for the florist', { exact: true }).fill('red ones');
        await section.getByRole('button', { name: 'Send' }).click();
        const verdict = await waitUntil(
          () => page.locator('[data-output="verdict"] .value').innerText(),
          (t) => t.length > 0,
          HANG_MS,
          100,
        );
        await page.screenshot({ path: join(SCRATCH, 'form-page-wait-done.png'), fullPage: true });

        expect(seenWhileWaiting).toContain('Approve the order');
        expect(seenWhileWaiting).toContain('The run is waiting for your answer.');
        expect(seenWhileWaiting).toContain('Say whether the order may go out.');
        expect(seenWhileWaiting).toMatch(/Answer before /);
        expect(progressWhileWaiting).toBe('Waiting for your answer: Approve the order');
        expect(violations).toEqual([]);
        expect(starsError.replace(/\s+/g, ' ')).toBe('Error: Enter a whole number for Stars');
        expect(summary).toContain('Enter a whole number for Stars');
        expect(verdict).toBe('tulips: approved, 4 stars, red ones');
        expect(await section.isHidden()).toBe(true);
        expect(problems).toEqual([]);
      } finally {
        await close();
      }
    },
    120_000,
  );

  browserIt(
    'a crash of the runtime mid-run ends with the page showing the failure, not spinning',
    async () => {
      const crashing = await startE2eRuntime();
      const { page, problems, close } = await phonePage();
      try {
        const slow: PipelineDefinition = {
          nodes: {
            word: { type: 'input', value_type: 'string', value: 'later' },
            wait: { type: 'delay', inputs: ['word'], ms: 20_000 },
            said: { type: 'output', from: 'wait' },
          },
        };
        const p = await crashing.publishPipeline('slow', slow, { form: { enabled: true } });
        await page.goto(p.body.form_url as string);
        await page.getByRole('button', { name: 'Run' }).click();
        const progress = page.locator('#progress');
        // As the stream (or, without it, the poll) tells it: waiting, running, or a node of the run.
        await waitUntil(
          () => progress.innerText(),
          (t) => /^(Starting|Step|Working|Waiting for its turn)/.test(t),
          HANG_MS,
          100,
        );
        await crashing.stop({ drainMs: 0 });
        const failure = page.locator('#failure');
        await waitUntil(
          () => failure.innerText(),
          (t) => t.length > 0,
          HANG_MS,
          200,
        );
        // A stop leaves the run to the next start (it fails nothing); the page, losing the
        // service, gives up after its retries and says so.
        expect(await failure.innerText()).toBe('The service cannot be reached.');
        expect(await page.locator('#run').isDisabled()).toBe(false);
        // The lost requests are the browser's own network errors, nothing the page threw.
        expect(problems.filter((m) => m.startsWith('page error'))).toEqual([]);
      } finally {
        await close();
        await crashing.cleanup().catch(() => undefined);
      }
    },
    120_000,
  );
});
