/**
 * A deployment's docs page in a real browser: Chromium from Debian's packages, driven by
 * playwright-core. Without Chromium the browser tests skip, loudly.
 */
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { createHash } from 'node:crypto';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import type { PipelineDefinition } from '../../functions/core/types';
import { png } from '../support/media';
import { startTestRuntime, waitUntil, type Published, type TestRuntime } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const CHROMIUM = process.env.PIPEGATE_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  console.warn(
    `\n*** SKIPPING the docs page browser test: no Chromium at ${CHROMIUM}. ***\n` +
      '*** Install it with: apt-get install -y chromium (or set PIPEGATE_CHROMIUM) ***\n',
  );
}

const shop: PipelineDefinition = {
  nodes: {
    item: { type: 'input', value_type: 'string', value: 'tea' },
    count: { type: 'input', value_type: 'integer', value: 2 },
    secret_discount: { type: 'input', value_type: 'float', value: 0.1 },
    line: { type: 'transform', inputs: ['item', 'count', 'secret_discount'], expression: "$string(count) & ' x ' & item" },
    order: { type: 'output', from: 'line' },
  },
};

const photoInfo: PipelineDefinition = {
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(1, 1).toString('base64')}`,
      media_types: ['image/png'],
    },
    about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes) & ' ' & photo.sha256" },
    info: { type: 'output', from: 'about' },
    photo_back: { type: 'output', from: 'photo' },
  },
};

// An input of every value type: the page's try-it and its snippets send each as its type takes it.
const everyType: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    ratio: { type: 'input', value_type: 'float', value: 0.5 },
    loud: { type: 'input', value_type: 'boolean', value: true },
    page: { type: 'input', value_type: 'reference', value: 'https://example.com/parcels/1' },
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(2, 2).toString('base64')}`,
      media_types: ['image/png'],
    },
    text: { type: 'transform', inputs: ['name', 'times', 'ratio', 'loud', 'page', 'photo'], expression: "name & ' ' & photo.media_type" },
    message: { type: 'output', from: 'text' },
  },
};

let rt: TestRuntime;
let everyDep: Published;
let dep: Published;
let photoDep: Published;
let browser: Browser | undefined;

beforeAll(async () => {
  rt = await startTestRuntime();
  dep = await rt.publishPipeline('shop', shop, { inputs: { secret_discount: { visible: false } } });
  photoDep = await rt.publishPipeline('photo-info', photoInfo);
  everyDep = await rt.publishPipeline('every-type', everyType);
  if (haveChromium) {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM });
  }
});

afterAll(async () => {
  await browser?.close();
  await rt?.cleanup();
});

describe('GET /v1/deployments/{id}/docs', () => {
  it('loads without a key, asks for one, and holds nothing of the deployment', async () => {
    const r = await rt.caller('GET', `/v1/deployments/${dep.deploymentId}/docs`, null);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(r.text).toContain('id="api-key"');
    expect(r.text).not.toContain('tea');
    expect((await rt.caller('GET', '/v1/deployments/not-a-uuid/docs', null)).status).toBe(404);
  });

  it('serves Swagger UI from its npm package, and no other file', async () => {
    const js = await rt.caller('GET', '/v1/docs/swagger-ui-bundle.js', null);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.text).toContain('SwaggerUIBundle');
    expect((await rt.caller('GET', '/v1/docs/swagger-ui.css', null)).status).toBe(200);
    for (const name of ['package.json', '..%2Fpackage.json', 'index.html']) {
      expect((await rt.caller('GET', `/v1/docs/${name}`, null)).status).toBe(404);
    }
  });

  it('carries ready-to-run snippets in the deployment document', async () => {
    const doc = await rt.caller('GET', `/v1/deployments/${dep.deploymentId}/openapi.json`, dep.apiKey);
    const post = (doc.body.paths as Record<string, { post?: Record<string, unknown> }>)[`/v1/deployments/${dep.deploymentId}/executions`]
      ?.post;
    const samples = post?.['x-codeSamples'] as { label: string; source: string }[];
    expect(samples.map((s) => s.label)).toEqual(['curl', 'TypeScript (openapi-fetch)', 'Python (requests)']);
    expect(samples[0]?.source).toContain(`/v1/deployments/${dep.deploymentId}/executions`);
    // The same deployment as an agent's tool: a client's configuration on the MCP operation.
    const mcp = (doc.body.paths as Record<string, { post?: Record<string, unknown> }>)[`/v1/deployments/${dep.deploymentId}/mcp`]?.post;
    const config = mcp?.['x-codeSamples'] as { label: string; source: string }[];
    expect(config.map((s) => s.label)).toEqual(['MCP client']);
    expect(config[0]?.source).toContain(`"url": "${rt.url}/v1/deployments/${dep.deploymentId}/mcp"`);
  });

  (haveChromium ? it : it.skip)(
    'in a browser: no console errors, the visible inputs, and a try-it call that returns 202',
    async () => {
      const page = await (browser as Browser).newPage();
      // Actions and navigations wait for their condition: only a hang reaches the limit.
      page.setDefaultTimeout(HANG_MS);
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      const executed: number[] = [];
      page.on('response', (res) => {
        if (res.request().method() === 'POST' && res.url().endsWith(`/v1/deployments/${dep.deploymentId}/executions`))
          executed.push(res.status());
      });

      const loaded = await page.goto(`${rt.url}/v1/deployments/${dep.deploymentId}/docs`);
      expect(loaded?.status()).toBe(200);
      await page.fill('#api-key', dep.apiKey);
      await page.click('#load');

      const contract = page.locator('#contract');
      await contract.waitFor({ state: 'visible' });
      const inputs = await contract.locator('table').first().locator('tbody tr').allInnerTexts();
      expect(inputs.map((row) => row.split('\t')[0])).toEqual(['item', 'count']);
      expect(await contract.innerText()).not.toContain('secret_discount');
      expect(await contract.innerText()).toContain('curl');
      expect(await contract.innerText()).toContain(`MCP URL: ${rt.url}/v1/deployments/${dep.deploymentId}/mcp`);
      // With the configuration an MCP client takes.
      expect(await contract.innerText()).toContain(`"url": "${rt.url}/v1/deployments/${dep.deploymentId}/mcp"`);
      expect(await contract.innerText()).toContain('"Authorization": "Bearer ${PIPEGATE_API_KEY}"');

      const post = page.locator('.opblock-post').first();
      await post.locator('.opblock-summary').click();
      await post.locator('button.execute').click();
      const status = post.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor();
      expect((await status.innerText()).trim()).toBe('202');
      expect(executed).toEqual([202]);
      expect(problems).toEqual([]);
      await page.close();
    },
    60_000,
  );
  (haveChromium ? it : it.skip)(
    'in a browser: sends a chosen file for an asset input inline, and explains when a file is too large for the page',
    async () => {
      const page = await (browser as Browser).newPage();
      // Actions and navigations wait for their condition: only a hang reaches the limit.
      page.setDefaultTimeout(HANG_MS);
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      await page.goto(`${rt.url}/v1/deployments/${photoDep.deploymentId}/docs`);
      await page.fill('#api-key', photoDep.apiKey);
      await page.click('#load');
      // Generous waits: Chromium shares this 2-core machine with other suites.
      await page.locator('#files-form').waitFor({ state: 'visible', timeout: HANG_MS });
      expect(await page.locator('#contract table').first().innerText()).toContain('asset');
      // Outputs by the kind their contract recorded.
      const outputs = await page.locator('#contract table').nth(1).locator('tbody tr').allInnerTexts();
      expect(outputs).toEqual(['info\tvalue (RAW)', 'photo_back\tfile (ASSET: a link)']);

      // A small PNG: inline, accepted, and the execution sees exactly its bytes.
      const bytes = png(6, 6);
      await page.setInputFiles('#file-photo', { name: 'six.png', mimeType: 'image/png', buffer: bytes });
      await page.click('#files-send');
      const result = page.locator('#files-result');
      // Polled from here: a predicate evaluated in the page would need the eval its CSP forbids.
      await waitUntil(
        () => result.innerText(),
        (t) => /^HTTP \d+/.test(t),
        HANG_MS,
        100,
      );
      const text = await result.innerText();
      expect(text).toMatch(/^HTTP 202\n/);
      const executionId = (JSON.parse(text.slice(text.indexOf('\n') + 1)) as { execution_id: string }).execution_id;
      await rt.waitForExecution(executionId, photoDep.apiKey);
      const done = await rt.caller('GET', `/v1/deployments/executions/${executionId}/result/`, photoDep.apiKey);
      const sha = createHash('sha256').update(bytes).digest('hex');
      expect((done.body.response_data as Record<string, { value: string }>).info?.value).toBe(`image/png ${bytes.length} ${sha}`);

      // Over the inline limit: nothing is sent, and the page says how to send it.
      const posts: string[] = [];
      page.on('request', (r) => {
        if (r.method() === 'POST') posts.push(r.url());
      });
      await page.setInputFiles('#file-photo', {
        name: 'big.png',
        mimeType: 'image/png',
        buffer: Buffer.concat([bytes, Buffer.alloc(INLINE_ASSET_BODY_MAX_BYTES)]),
      });
      await page.click('#files-send');
      await waitUntil(
        () => result.innerText(),
        (t) => t.includes('uploads route'),
        HANG_MS,
        100,
      );
      expect(await result.innerText()).toContain(`over the ${INLINE_ASSET_BODY_MAX_BYTES} bytes this page sends inline`);
      expect(posts).toEqual([]);
      expect(problems).toEqual([]);
      await page.close();
    },
    180_000,
  );
  (haveChromium ? it : it.skip)(
    'in a browser: the try-it of a deployment with an input of every value type (string, integer, float, boolean, reference, asset) returns 202 as it stands',
    async () => {
      const page = await (browser as Browser).newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      const executed: number[] = [];
      page.on('response', (res) => {
        if (res.request().method() === 'POST' && res.url().endsWith(`/v1/deployments/${everyDep.deploymentId}/executions`))
          executed.push(res.status());
      });
      await page.goto(`${rt.url}/v1/deployments/${everyDep.deploymentId}/docs`);
      await page.fill('#api-key', everyDep.apiKey);
      await page.click('#load');
      await page.locator('#contract').waitFor({ state: 'visible', timeout: 60_000 });
      // The curl the page shows says REFERENCE and ASSET where those inputs take them.
      const curl = await page.locator('#contract h3:text-is("curl") + pre').innerText();
      expect(curl).toContain('"page":{"value":"https://example.com/parcels/1","value_type":"REFERENCE"}');
      expect(curl).toContain('"value_type":"ASSET"');

      const post = page.locator('.opblock-post').first();
      await post.locator('.opblock-summary').click();
      await post.locator('button.execute').click();
      const status = post.locator('.live-responses-table tr.response .response-col_status').first();
      await status.waitFor({ timeout: 60_000 });
      expect((await status.innerText()).trim()).toBe('202');
      expect(executed).toEqual([202]);
      expect(problems).toEqual([]);
      await page.close();
    },
    120_000,
  );
});
