/**
 * The web form's "done when", with the example media pipeline: an owner pushes
 * examples/thumbnail.json (its image service, examples/servers/thumbnail.mjs, running beside it)
 * and publishes it with `pipegate publish --form`, the CLI as a real process; a person with only
 * the printed link opens it in Chromium on a phone-sized viewport, attaches a photo (uploaded
 * straight to storage), runs it and sees the thumbnail. That execution's result fills
 * `output_artifacts`; a plain HTTP execution with the key keeps `[]`. The same against
 * start:synth in test/e2e/synth/form-thumbnail.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { runCli, type CliRun } from '../support/cli';
import { png } from '../support/media';
import { startE2eRuntime, waitUntil, type E2eRuntime } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const CHROMIUM = process.env.PIPEGATE_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`\n*** SKIPPING the thumbnail form browser test: no Chromium at ${CHROMIUM}. ***\n`);
const browserIt = haveChromium ? it : it.skip;
const SCRATCH = join(__dirname, '../../.screenshots');
const SHOTS = process.env.PIPEGATE_SCREENSHOTS === 'docs' ? join(__dirname, '../../docs') : SCRATCH;

let rt: E2eRuntime;
let server: ChildProcess;
let serverLog = '';
let work: string;
let browser: Browser | undefined;
const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });

beforeAll(async () => {
  server = spawn(process.execPath, [join(__dirname, '../../examples/servers/thumbnail.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.on('data', (c: Buffer) => (serverLog += c.toString()));
  server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
  const serverUrl = await waitUntil(
    async () => /listening on (http:\/\/\S+)/.exec(serverLog)?.[1] ?? '',
    (url) => url !== '',
  );
  rt = await startE2eRuntime({ publicUrlIsOwn: true });
  work = mkdtempSync(join(tmpdir(), 'pipegate-thumbnail-form-'));
  // The example as it is, but for the image service's port (the example names 4012).
  const example = readFileSync(join(__dirname, '../../examples/thumbnail.json'), 'utf8');
  expect(example).toContain('http://127.0.0.1:4012/thumbnail?size=64');
  writeFileSync(join(work, 'thumbnail.json'), example.replace('http://127.0.0.1:4012', serverUrl));
  if (haveChromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }
  mkdirSync(SCRATCH, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await rt?.cleanup();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the example media pipeline as a web form', () => {
  browserIt(
    'an owner publishes it with --form; a person with the link makes a thumbnail from a phone; only that execution lists output_artifacts',
    async () => {
      // The owner, with the CLI.
      expect((await pg(['push', 'thumbnail.json'])).code).toBe(0);
      expect((await pg(['run', 'thumbnail'])).code).toBe(0);
      const published = await pg(['publish', 'thumbnail', '--form', '--form-title', 'Make a thumbnail', '--json']);
      expect(published.code).toBe(0);
      const answer = JSON.parse(published.stdout) as { form_url: string; api_key: string; deployment_id: string };
      expect(answer.form_url).toMatch(/\/v1\/forms\/pgf_/);

      // The person: only the link, on a phone.
      const context = await (browser as Browser).newContext({
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
      });
      const page = await context.newPage();
      // Actions and navigations wait for their condition: only a hang reaches the limit.
      page.setDefaultTimeout(HANG_MS);
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      try {
        expect((await page.goto(answer.form_url))?.status()).toBe(200);
        await page.locator('#run').waitFor();
        // What the person reads before choosing: the example's labels, the kind and size in words.
        const form = await page.locator('#run-form').innerText();
        expect(form).toContain('Photo');
        expect(form).toContain('A PNG image, 10 MB or smaller.');
        expect(form).not.toMatch(/image\/|MiB|\d bytes|accepts/);
        const photo = png(640, 480, (x, y) => [(x * 255) / 640, (y * 255) / 480, 160, 255]);
        await page.setInputFiles('#in-photo', { name: 'photo.png', mimeType: 'image/png', buffer: photo });
        await page.getByRole('button', { name: 'Run' }).click();
        const img = page.locator('[data-output="thumbnail"] img');
        const size = await waitUntil(
          () =>
            img
              .evaluate((el) => ({
                w: (el as unknown as { naturalWidth: number }).naturalWidth,
                h: (el as unknown as { naturalHeight: number }).naturalHeight,
              }))
              .catch(() => ({ w: 0, h: 0 })),
          (s) => s.w > 0,
          HANG_MS,
          100,
        );
        expect(size).toEqual({ w: 64, h: 48 });
        expect(await page.locator('[data-output="thumbnail_bytes"] .value').innerText()).toMatch(/^\d+$/);
        expect(await page.locator('#out-thumbnail').innerText()).toBe('Thumbnail');
        expect(await page.locator('[data-output="thumbnail"] a.download').getAttribute('download')).toBe('thumbnail.png');
        await page.screenshot({ path: join(SHOTS, 'form-thumbnail.png'), fullPage: true });
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
      expect(serverLog).toContain('640×480 → 200 64×48');

      // The owner sees it came from the form; the deployment key reads its result, files listed.
      const listed = await pg(['executions', 'thumbnail', '--json']);
      const rows = (JSON.parse(listed.stdout) as { executions: { execution_id: string; source: string }[] }).executions;
      expect(rows.map((r) => r.source)).toEqual(['form']);
      const formId = rows[0]?.execution_id as string;
      const fromForm = await rt.caller('GET', `/v1/deployments/executions/${formId}/result/`, answer.api_key);
      expect(fromForm.status).toBe(200);
      const artifacts = fromForm.body.output_artifacts as { output: string; url: string; media_type: string; bytes: number }[];
      expect(artifacts).toEqual([
        { output: 'thumbnail', url: expect.any(String) as string, media_type: 'image/png', bytes: expect.any(Number) as number },
      ]);
      const served = Buffer.from(await (await fetch(artifacts[0]?.url ?? '')).arrayBuffer());
      expect({ width: served.readUInt32BE(16), height: served.readUInt32BE(20), bytes: served.length }).toEqual({
        width: 64,
        height: 48,
        bytes: artifacts[0]?.bytes,
      });

      // A plain HTTP caller (what curl sends): the same pipeline, output_artifacts stays [].
      const accepted = await rt.caller(
        'POST',
        `/v1/deployments/${answer.deployment_id}/executions/`,
        answer.api_key,
        { workflow_input: { photo: { value: png(200, 120).toString('base64'), value_type: 'ASSET' } } },
        { prefer: 'wait=20' },
      );
      expect(accepted.status).toBe(200);
      const fromApi = await rt.caller('GET', `/v1/deployments/executions/${accepted.body.execution_id as string}/result/`, answer.api_key);
      expect(fromApi.body).toMatchObject({ status: 'completed', output_artifacts: [] });
      expect((fromApi.body.response_data as Record<string, { media_type: string }>).thumbnail?.media_type).toBe('image/png');
    },
    180_000,
  );
});
