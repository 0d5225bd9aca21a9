/**
 * The docs page's behaviour in the browser (bundled by `npm run build:browser`; the page is
 * functions/core/docs-page.ts): load the deployment's document with the key, list the visible
 * inputs and outputs and the snippets, offer a files form for asset inputs, then hand the
 * document to Swagger UI with the key pre-authorized. Everything is inserted as text, never as
 * HTML.
 */

type Json = Record<string, unknown>;

interface SwaggerUi {
  preauthorizeApiKey(scheme: string, key: string): void;
}
type SwaggerUiBundle = (options: {
  spec: unknown;
  dom_id: string;
  tryItOutEnabled: boolean;
  docExpansion: string;
  defaultModelsExpandDepth: number;
  onComplete: () => void;
}) => SwaggerUi;

declare global {
  interface Window {
    /** Swagger UI's bundle, loaded by its own script tag before this one. */
    SwaggerUIBundle?: SwaggerUiBundle;
  }
}

function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page has no #${id}`);
  return e as T;
}

const root = byId<HTMLElement>('pipegate-docs');
const base = root.dataset.base ?? '';
const id = root.dataset.deployment ?? '';
const inlineMax = Number(root.dataset.inlineMax);
const form = byId<HTMLFormElement>('key-form');
const input = byId<HTMLInputElement>('api-key');
const message = byId<HTMLElement>('message');
const contract = byId<HTMLElement>('contract');
let apiKey = '';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string | null, children: Node[] = []): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text;
  e.append(...children);
  return e;
}

function at(x: unknown, path: readonly string[]): unknown {
  let v = x;
  for (const k of path) v = typeof v === 'object' && v !== null ? (v as Json)[k] : undefined;
  return v;
}

const obj = (x: unknown): Json => (typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Json) : {});

function table(headings: string[], rows: string[][]): HTMLTableElement {
  return el('table', null, [
    el('thead', null, [
      el(
        'tr',
        null,
        headings.map((h) => el('th', h)),
      ),
    ]),
    el(
      'tbody',
      null,
      rows.map((r) =>
        el(
          'tr',
          null,
          r.map((c) => el('td', c)),
        ),
      ),
    ),
  ]);
}

// The per-deployment document types each output by what its contract recorded (RAW or ASSET);
// a contract published before that was recorded gives either.
function outputKind(schema: unknown): string {
  const name = String(at(schema, ['$ref']) ?? '')
    .split('/')
    .pop();
  if (name === 'AssetOutputValue') return 'file (ASSET: a link)';
  if (name === 'RawOutputValue') return 'value (RAW)';
  return 'value (RAW) or file (ASSET)';
}

function showContract(spec: unknown): void {
  const schemas = obj(at(spec, ['components', 'schemas']));
  const inputs = obj(at(schemas, ['DeploymentExecutionRequest', 'properties', 'workflow_input', 'properties']));
  const outputs = obj(at(schemas, ['DeploymentExecutionResult', 'properties', 'response_data', 'properties']));
  contract.textContent = '';
  contract.append(el('h2', 'Inputs'));
  const assetIds = Object.keys(inputs).filter((k) => at(inputs[k], ['properties', 'value_type', 'const']) === 'ASSET');
  contract.append(
    table(
      ['id', 'type', 'published value'],
      Object.keys(inputs).map((k) => {
        const value = obj(at(inputs[k], ['properties', 'value']));
        if (assetIds.includes(k)) return [k, 'asset', `a file (${String(value.default ?? '').length} characters as a data URI)`];
        return [k, value.format === 'uri' ? 'reference' : String(value.type), JSON.stringify(value.default)];
      }),
    ),
  );
  if (assetIds.length > 0) contract.append(filesForm(assetIds, inputs));
  contract.append(el('h2', 'Outputs'));
  contract.append(
    table(
      ['id', 'type'],
      Object.keys(outputs).map((k) => [k, outputKind(outputs[k])]),
    ),
  );
  const samples = at(spec, ['paths', `/v1/deployments/${id}/executions`, 'post', 'x-codeSamples']);
  for (const s of Array.isArray(samples) ? samples : []) {
    const sample = obj(s);
    contract.append(el('h3', String(sample.label ?? sample.lang ?? '')));
    contract.append(el('pre', String(sample.source ?? '')));
  }
  // The same deployment as an agent's tool: its MCP URL and a client's configuration.
  const mcp = at(spec, ['paths', `/v1/deployments/${id}/mcp`, 'post', 'x-codeSamples']);
  if (Array.isArray(mcp) && mcp.length > 0) {
    contract.append(el('h2', 'As an MCP tool'));
    contract.append(el('p', `MCP URL: ${base}/v1/deployments/${id}/mcp (send the key as Authorization: Bearer <key>)`));
    for (const s of mcp) contract.append(el('pre', String(obj(s).source ?? '')));
  }
  contract.hidden = false;
}

function readFile(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}

// Try it with files: each chosen file goes inline as a data URI, as the execute route takes it
// up to its inline limit. Larger files need the uploads route's PUT to object storage, which
// this page's content security policy (connect-src 'self') does not allow.
function filesForm(ids: string[], inputs: Json): HTMLFormElement {
  const box = el('form', null, [el('h2', 'Try it with files')]);
  box.id = 'files-form';
  const pickers = ids.map((k) => {
    const picker = el('input');
    picker.type = 'file';
    picker.id = `file-${k}`;
    picker.dataset.input = k;
    const label = el('label', `${k} `);
    label.htmlFor = picker.id;
    const about = el('small', ` ${String(obj(inputs[k]).description ?? '')}`);
    box.append(el('p', null, [label, picker, about]));
    return picker;
  });
  const send = el('button', 'Execute with these files');
  send.type = 'submit';
  send.id = 'files-send';
  const out = el('pre');
  out.id = 'files-result';
  box.append(send, out);
  box.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = pickers.filter((p) => (p.files?.length ?? 0) > 0);
    if (chosen.length === 0) {
      out.textContent = 'Choose a file first.';
      return;
    }
    out.textContent = 'Reading…';
    (async () => {
      const workflowInput: Record<string, { value: string; value_type: 'ASSET' }> = {};
      for (const p of chosen) {
        const file = p.files?.[0];
        if (file !== undefined) workflowInput[p.dataset.input ?? ''] = { value: await readFile(file), value_type: 'ASSET' };
      }
      const body = JSON.stringify({ workflow_input: workflowInput });
      const size = new Blob([body]).size;
      if (size > inlineMax) {
        throw new Error(
          `These files make a request of ${size} bytes, over the ${inlineMax} bytes this page sends inline. ` +
            `Send larger files through the uploads route (POST /v1/deployments/${id}/uploads/, then PUT the bytes), e.g. with: pipegate execute ${id} --input <id>=@<file>`,
        );
      }
      out.textContent = 'Sending…';
      const r = await fetch(`${base}/v1/deployments/${encodeURIComponent(id)}/executions/`, {
        method: 'POST',
        headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
        body,
      });
      out.textContent = `HTTP ${r.status}\n${await r.text()}`;
    })().catch((e: unknown) => {
      out.textContent = e instanceof Error ? e.message : String(e);
    });
  });
  return box;
}

function render(spec: unknown, key: string): void {
  showContract(spec);
  const bundle = window.SwaggerUIBundle;
  if (bundle === undefined) {
    message.textContent = 'The API explorer did not load; the inputs, outputs and examples above still apply.';
    return;
  }
  const ui = bundle({
    spec,
    dom_id: '#swagger-ui',
    tryItOutEnabled: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: -1,
    onComplete: () => ui.preauthorizeApiKey('ApiKeyHeader', key),
  });
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const key = input.value.trim();
  if (!key) {
    message.textContent = 'Enter the API key of this deployment.';
    return;
  }
  message.textContent = 'Loading…';
  (async () => {
    const r = await fetch(`${base}/v1/deployments/${encodeURIComponent(id)}/openapi.json`, { headers: { 'X-API-Key': key } });
    if (r.status === 401) throw new Error('That API key is not valid.');
    if (r.status === 404) throw new Error('This key does not open this deployment (or it was deleted).');
    if (!r.ok) throw new Error(`Could not load the API (HTTP ${r.status}).`);
    const spec: unknown = await r.json();
    message.textContent = '';
    apiKey = key;
    render(spec, key);
  })().catch((e: unknown) => {
    message.textContent = e instanceof Error ? e.message : String(e);
  });
});

export {};
