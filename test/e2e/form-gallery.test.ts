/**
 * The web form of a map (examples/photo-styles.json, the example job service beside it): a person
 * with the link attaches a photo in Chromium, runs it, reads the map's progress in words ("… of 4
 * variants done") and sees the gallery: four pictures in the order of the styles, each with its
 * own download (`gallery-1.png` …). The form's execution lists the four files in
 * `output_artifacts`, each with its index.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import type { PipelineDefinition } from '../../functions/core/types';
import { startImageJobs, type ImageJobs } from '../support/image-jobs';
import { png } from '../support/media';
import { startE2eRuntime, waitUntil, type E2eRuntime } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const CHROMIUM = process.env.PIPEGATE_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`\n*** SKIPPING the gallery form browser test: no Chromium at ${CHROMIUM}. ***\n`);
const browserIt = haveChromium ? it : it.skip;

let rt: E2eRuntime;
let jobs: ImageJobs;
let browser: Browser | undefined;

beforeAll(async () => {
  jobs = await startImageJobs({ RETRY_AFTER_MAX_S: '1' });
  rt = await startE2eRuntime({ publicUrlIsOwn: true });
  if (haveChromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }
});

afterAll(async () => {
  await browser?.close();
  await rt?.cleanup();
  await jobs?.close();
});

browserIt("shows a map's progress in words and its list of files as a gallery, each file its own download", async () => {
  // Prepare: the example as it is, but for the job service's port.
  const text = readFileSync(join(__dirname, '../../examples/photo-styles.json'), 'utf8').replaceAll('http://127.0.0.1:4013', jobs.url);
  const file = JSON.parse(text) as Record<string, unknown>;
  const dep = await rt.publishPipeline(
    'photo-styles',
    { description: file.description, timeout_ms: file.timeout_ms, nodes: file.nodes } as PipelineDefinition,
    {
      form: { enabled: true, title: 'Your photo in four styles' },
    },
  );
  const formUrl = String(dep.body.form_url);
  const page = await (browser as Browser).newPage();
  page.setDefaultTimeout(HANG_MS);
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));

  try {
    // Act
    expect((await page.goto(formUrl))?.status()).toBe(200);
    await page.locator('#run').waitFor();
    // Everything the progress line says, as it says it.
    await page.evaluate(
      "(() => { window.said = []; const el = document.getElementById('progress'); new MutationObserver(() => window.said.push(el.textContent || '')).observe(el, { childList: true, characterData: true, subtree: true }); })()",
    );
    await page.setInputFiles('#in-photo', {
      name: 'photo.png',
      mimeType: 'image/png',
      buffer: png(40, 40, (x, y) => [x * 6, y * 6, 90, 255]),
    });
    await page.fill('#in-seconds', '2');
    await page.getByRole('button', { name: 'Run' }).click();
    const images = page.locator('[data-output="gallery"] .gallery img');
    await waitUntil(
      () => images.count(),
      (n) => n === 4,
      HANG_MS,
      100,
    );
    // Each picture loads from its own link: wait until every one has.
    const sizes = await waitUntil(
      () => images.evaluateAll((els) => els.map((el) => (el as unknown as { naturalWidth: number }).naturalWidth)),
      (ws) => ws.every((w) => w > 0),
      HANG_MS,
      100,
    );
    const downloads = await page
      .locator('[data-output="gallery"] .gallery a.download')
      .evaluateAll((els) => els.map((el) => el.getAttribute('download')));
    const said = (await page.evaluate('window.said')) as string[];
    const summary = await page.locator('[data-output="summary"] .value').innerText();

    // Assess
    expect(sizes).toEqual([40, 40, 40, 40]);
    expect(downloads).toEqual(['gallery-1.png', 'gallery-2.png', 'gallery-3.png', 'gallery-4.png']);
    expect(said.some((s) => /\d of 4 variants done/.test(s))).toBe(true);
    expect(said.some((s) => /skipped: Refused/.test(s))).toBe(true);
    expect(summary).toBe('4 styles rendered');
    expect(problems).toEqual([]);
  } finally {
    await page.close();
  }
});
