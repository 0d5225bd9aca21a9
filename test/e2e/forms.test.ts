/**
 * Web-form deployments over real HTTP (the local runtime; again against start:synth in
 * test/e2e/synth/forms.test.ts): publish with a form, the link's page, a run through the link
 * with a real PNG, its result's output_artifacts (and none for an API execution), the owner's
 * views, the link's scope (another link, a tampered one, the deployment key), hidden inputs and
 * outputs never exposed, rate limits, and disable / rotate / delete taking effect at once.
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { dataUri, png } from '../support/media';
import { request, sleep, startE2eRuntime, type E2eRuntime, type Published } from '../support/runtime';

let rt: E2eRuntime;
const picture = png(6, 4, (x, y) => [x * 40, 200, y * 60, 255]);

const def: PipelineDefinition = {
  description: 'Captions a picture',
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: dataUri('image/png', png(1, 1)),
      media_types: ['image/png', 'image/jpeg'],
      description: 'The picture to caption',
    },
    caption: { type: 'input', value_type: 'string', value: 'a picture', description: 'What it shows' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    secret_prefix: { type: 'input', value_type: 'string', value: 'HIDDEN-PREFIX' },
    text: {
      type: 'transform',
      inputs: ['caption', 'times', 'loud', 'secret_prefix'],
      expression: "(loud ? $uppercase(caption) : caption) & ' x' & $string(times)",
    },
    line: { type: 'output', from: 'text', description: 'The caption' },
    image: { type: 'output', from: 'photo' },
    internal: { type: 'output', from: 'secret_prefix' },
  },
};
const visibility = { inputs: { secret_prefix: { visible: false } }, outputs: { internal: { visible: false } } };

let pub: Published;
let formUrl: string;

beforeAll(async () => {
  rt = await startE2eRuntime({ env: { PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE: '1000', PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: '1000' } });
  pub = await rt.publishPipeline('captioner', def, {
    ...visibility,
    form: { enabled: true, title: 'Caption a picture', description: 'Pick a picture and a caption.' },
  });
  formUrl = pub.body.form_url as string;
});
afterAll(async () => {
  await rt?.cleanup();
});

const formRun = (url: string, workflowInput: Record<string, unknown>, headers: Record<string, string> = {}) =>
  request<Record<string, unknown>>(`${url}/executions`, 'POST', { workflow_input: workflowInput }, headers);

async function finishedThroughForm(url: string, workflowInput: Record<string, unknown>) {
  const accepted = await formRun(url, workflowInput);
  expect(accepted.status).toBe(202);
  const statusUrl = accepted.body.status_url as string;
  let r = await request<Record<string, unknown>>(statusUrl, 'GET', undefined, { prefer: 'wait=30' });
  while (r.body.status === 'pending' || r.body.status === 'running') r = await request(statusUrl, 'GET', undefined, { prefer: 'wait=30' });
  return { id: accepted.body.execution_id as string, statusUrl, result: r };
}

describe('publishing with a form', () => {
  it('answers an unguessable form_url on this service, shown again in the owner view', async () => {
    expect(formUrl).toMatch(new RegExp(`^${rt.url}/v1/forms/pgf_[A-Za-z0-9_-]{43}$`));
    expect(pub.body.form).toEqual({ enabled: true, title: 'Caption a picture', description: 'Pick a picture and a caption.' });
    const view = await rt.owner('GET', '/v1/pipelines/captioner/deployment');
    expect((view.body.deployment as Record<string, unknown>).form_url).toBe(formUrl);
    // A republish without `form` keeps the same link.
    const again = await rt.owner('PUT', '/v1/pipelines/captioner/deployment', {});
    expect(again.body.form_url).toBe(formUrl);
  });

  it("tells callers, in the deployment's own OpenAPI document, that a form exists, never its link", async () => {
    const doc = await rt.caller('GET', `/v1/deployments/${pub.deploymentId}/openapi.json`, pub.apiKey);
    expect(doc.status).toBe(200);
    const about = (doc.body.info as { description: string }).description;
    expect(about).toContain('This deployment also has a web form');
    expect(about).toContain('`output_artifacts`');
    expect(doc.text).not.toContain(formUrl.split('/').pop() as string);
    expect(doc.text).not.toContain('/v1/forms/');
  });

  it('refuses a malformed form option, naming the field', async () => {
    const r = await rt.owner('PUT', '/v1/pipelines/captioner/deployment', { form: { enabled: 'yes' } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.detail)).toMatch(/form\.enabled/);
  });
});

describe('the page', () => {
  it('is generated from the published contract: visible inputs and outputs only, strict CSP, no key', async () => {
    const res = await fetch(formUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).toContain('<h1>Caption a picture</h1>');
    expect(html).toMatch(/<label for="in-caption">Caption<\/label>/);
    expect(html).toMatch(/type="file" id="in-photo"[^>]*accept="image\/png,image\/jpeg"/);
    expect(html).toMatch(/type="text" inputmode="numeric" id="in-times"[^>]*value="2"/);
    expect(html).toMatch(/type="checkbox" id="in-loud"/);
    expect(html).toContain('The picture to caption');
    expect(html).toContain('data-output="line"');
    expect(html).not.toContain('secret_prefix');
    expect(html).not.toContain('HIDDEN-PREFIX');
    expect(html).not.toContain('internal');
    expect(html).not.toMatch(/<script>/);
    const script = await fetch(`${formUrl}/files/pipegate-form.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
  });

  it('answers 404 alike for a tampered, unknown or malformed link: the same page in words, for a person', async () => {
    const token = formUrl.split('/').pop() as string;
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const pages = new Set<string>();
    for (const bad of [flipped, `pgf_${'A'.repeat(43)}`, 'nonsense']) {
      const r = await fetch(`${rt.url}/v1/forms/${bad}`);
      expect(r.status).toBe(404);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'sha256-/);
      expect(r.headers.get('cache-control')).toBe('no-store');
      pages.add(await r.text());
    }
    expect(pages.size).toBe(1);
    expect([...pages][0]).toContain('<h1>This link does not open a form</h1>');
    // The form's other routes keep answering callers' JSON.
    const run = await request<Record<string, unknown>>(`${rt.url}/v1/forms/${flipped}/executions`, 'POST', {}, {});
    expect(run.status).toBe(404);
    expect(run.body).toEqual({ error: 'Form Not Found' });
  });
});

describe('a run through the link', () => {
  it('runs with the visible inputs and a picture, and its result lists the picture in output_artifacts', async () => {
    const { id, statusUrl, result } = await finishedThroughForm(formUrl, {
      photo: { value: dataUri('image/png', picture), value_type: 'ASSET' },
      caption: { value: 'a cat', value_type: 'RAW' },
      times: { value: 3, value_type: 'RAW' },
      loud: { value: true, value_type: 'RAW' },
    });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'completed', execution_id: id, status_url: statusUrl, error_message: null });
    const data = result.body.response_data as Record<string, { value: string; value_type: string }>;
    expect(data.line).toEqual({ value: 'A CAT x3', value_type: 'RAW' });
    expect(data.internal).toBeUndefined();
    const artifacts = result.body.output_artifacts as { output: string; url: string; media_type: string; bytes: number }[];
    expect(artifacts).toEqual([
      { output: 'image', url: expect.stringMatching(/\/v1\/assets\//), media_type: 'image/png', bytes: picture.length },
    ]);
    const bytes = Buffer.from(await (await fetch(artifacts[0]!.url)).arrayBuffer());
    expect(bytes.equals(picture)).toBe(true);

    // The deployment key reads it too, output_artifacts included; the owner sees where it came from.
    const withKey = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, pub.apiKey);
    expect((withKey.body.output_artifacts as unknown[]).length).toBe(1);
    const listed = await rt.owner('GET', '/v1/pipelines/captioner/deployment/executions');
    const row = (listed.body.executions as { execution_id: string; source: string }[]).find((e) => e.execution_id === id);
    expect(row?.source).toBe('form');
    const owned = await rt.owner('GET', `/v1/pipelines/captioner/executions/${id}`);
    expect(owned.body.source).toBe('form');
  });

  it('leaves output_artifacts empty for an API execution', async () => {
    const r = await rt.caller('POST', `/v1/deployments/${pub.deploymentId}/executions/`, pub.apiKey, {}, { prefer: 'wait=30' });
    expect(r.status).toBe(200);
    expect(r.body.output_artifacts).toEqual([]);
    const listed = await rt.owner('GET', '/v1/pipelines/captioner/deployment/executions');
    const row = (listed.body.executions as { execution_id: string; source: string }[]).find((e) => e.execution_id === r.body.execution_id);
    expect(row?.source).toBe('api');
  });

  it('refuses a hidden input, a callback and a wrong picture type as callers are refused', async () => {
    const hidden = await formRun(formUrl, { secret_prefix: { value: 'x', value_type: 'RAW' } });
    expect(hidden.status).toBe(422);
    expect(JSON.stringify(hidden.body)).not.toContain('HIDDEN');
    const callback = await request<Record<string, unknown>>(`${formUrl}/executions`, 'POST', { callback: 'http://127.0.0.1:9/x' }, {});
    expect(callback.status).toBe(400);
    const gif = Buffer.from('R0lGODlhAQABAAAAACw=', 'base64');
    const wrong = await formRun(formUrl, { photo: { value: dataUri('image/gif', gif), value_type: 'ASSET' } });
    expect(wrong.status).toBe(422);
  });

  it('keeps a form execution to its own link: an API execution id reads nothing through it', async () => {
    const api = await rt.caller('POST', `/v1/deployments/${pub.deploymentId}/executions/`, pub.apiKey, {});
    const r = await request(`${formUrl}/executions/${api.body.execution_id as string}`, 'GET', undefined, {});
    expect(r.status).toBe(404);
  });

  it('hands out an upload URL through the link', async () => {
    const r = await request<Record<string, unknown>>(`${formUrl}/uploads`, 'POST', { media_type: 'image/png', bytes: picture.length }, {});
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ method: 'PUT', asset: { value_type: 'ASSET' } });
  });
});

describe('rate limits', () => {
  it('answer 429 with Retry-After and a message naming the limit', async () => {
    const limited = await startE2eRuntime({ env: { PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: '2' } });
    try {
      const p = await limited.publishPipeline('limited', def, { form: { enabled: true } });
      const url = p.body.form_url as string;
      // The windows are whole minutes: start well inside one, so the three requests share it.
      if (new Date().getUTCSeconds() > 50) await sleep((61 - new Date().getUTCSeconds()) * 1000);
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof formRun>> | null = null;
      for (let i = 0; i < 3; i++) {
        last = await formRun(url, {});
        statuses.push(last.status);
      }
      expect(statuses).toEqual([202, 202, 429]);
      expect(Number(last?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(String(last?.body.detail)).toMatch(/at most 2 runs, uploads and progress streams a minute/);
      // Reading a run is not counted: the page's long polls never run into the limit.
      const page = await fetch(url);
      expect(page.status).toBe(200);
    } finally {
      await limited.cleanup();
    }
  });

  it('count one address across every link: the address limit answers 429 naming it', async () => {
    const limited = await startE2eRuntime({
      env: { PIPEGATE_FORM_ADDRESS_ACTIONS_PER_MINUTE: '2', PIPEGATE_FORM_LINK_ACTIONS_PER_MINUTE: '1000' },
    });
    try {
      const a = (await limited.publishPipeline('by-address-a', def, { form: { enabled: true } })).body.form_url as string;
      const b = (await limited.publishPipeline('by-address-b', def, { form: { enabled: true } })).body.form_url as string;
      // The windows are whole minutes: start well inside one, so the three requests share it.
      if (new Date().getUTCSeconds() > 50) await sleep((61 - new Date().getUTCSeconds()) * 1000);
      const first = await formRun(a, {});
      const second = await formRun(b, {});
      const third = await formRun(a, {});
      // Two links, each far from its own limit: the third run is the address's third.
      expect([first.status, second.status, third.status]).toEqual([202, 202, 429]);
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(String(third.body.detail)).toMatch(/at most 2 runs, uploads and progress streams a minute may come from one address/);
    } finally {
      await limited.cleanup();
    }
  });
});

describe('the owner controls the link', () => {
  it('disable, enable, rotate and delete take effect at once', async () => {
    const p = await rt.publishPipeline('controlled', def, { form: { enabled: true } });
    const first = p.body.form_url as string;
    const run = await formRun(first, {});
    expect(run.status).toBe(202);

    const off = await rt.owner('PUT', '/v1/pipelines/controlled/deployment', { form: { enabled: false } });
    expect(off.body.form_url).toBeNull();
    // A link that no longer opens a form is the page a person can read, as a mistyped one is.
    const deadLink = async (url: string) => {
      const r = await fetch(url);
      return {
        status: r.status,
        type: r.headers.get('content-type'),
        readable: (await r.text()).includes('This link does not open a form'),
      };
    };
    const readable = { status: 404, type: 'text/html; charset=utf-8', readable: true };
    expect(await deadLink(first)).toEqual(readable);
    expect((await request(run.body.status_url as string, 'GET', undefined, {})).status).toBe(404);

    const on = await rt.owner('PUT', '/v1/pipelines/controlled/deployment', { form: { enabled: true } });
    expect(on.body.form_url).toBe(first);
    expect((await fetch(first)).status).toBe(200);

    const rotated = await rt.owner('POST', '/v1/pipelines/controlled/deployment/keys', { credential: 'form_link' });
    expect(rotated.status).toBe(200);
    const second = rotated.body.form_url as string;
    expect(second).not.toBe(first);
    expect(await deadLink(first)).toEqual(readable);
    expect((await fetch(second)).status).toBe(200);
    // The old link's run is not readable through the new link.
    expect((await request(`${second}/executions/${run.body.execution_id as string}`, 'GET', undefined, {})).status).toBe(404);

    const gone = await rt.owner('DELETE', `/v1/pipelines/controlled/deployment?confirm=${p.deploymentId}`);
    expect(gone.status).toBe(204);
    expect(await deadLink(second)).toEqual(readable);
    expect((await formRun(second, {})).status).toBe(404);
  });

  it('refuses to rotate the link of a deployment without a form', async () => {
    await rt.publishPipeline('formless', def);
    const r = await rt.owner('POST', '/v1/pipelines/formless/deployment/keys', { credential: 'form_link' });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.detail)).toMatch(/no web form/);
  });
});
