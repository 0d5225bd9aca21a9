/**
 * A deployment's docs page: an HTML shell that asks for the caller's API key, then loads the
 * deployment's own OpenAPI document with it and renders it with Swagger UI, whose "try it"
 * sends the same key. The shell holds nothing about the deployment but its id, so it needs no
 * key to load; everything the deployment publishes is fetched with the key, through the
 * authorizer, like any caller request.
 */
import { INLINE_ASSET_BODY_MAX_BYTES } from './assets';
import { escapeHtml, pageStart } from './html';
import { deploymentSnippets } from './snippets';

/** Our own script, served beside Swagger UI's files: the page allows scripts from its origin only. */
export const DOCS_SCRIPT_NAME = 'pipegate-docs.js';

export const docsAssetUrl = (baseUrl: string, name: string): string => `${baseUrl}/v1/docs/${name}`;

/**
 * Swagger UI sets inline styles, so styles may be inline; scripts come only from this origin and
 * calls go only to it (the document's server is the same base URL).
 */
export const DOCS_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function docsPageHtml(deploymentId: string, baseUrl: string): string {
  const asset = (name: string) => escapeHtml(docsAssetUrl(baseUrl, name));
  return `${pageStart(`pipegate deployment ${deploymentId}`)}
<link rel="stylesheet" href="${asset('swagger-ui.css')}">
<style>
  body { margin: 0; font-family: sans-serif; }
  #pipegate-docs header { padding: 16px 20px; border-bottom: 1px solid #ddd; }
  #pipegate-docs h1 { font-size: 20px; margin: 0 0 8px; }
  #key-form { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
  #api-key { min-width: 28em; padding: 6px; font-family: monospace; }
  #message { color: #a40000; margin: 8px 0 0; min-height: 1em; }
  #contract { padding: 0 20px; }
  #contract table { border-collapse: collapse; margin: 8px 0 16px; }
  #contract th, #contract td { border: 1px solid #ddd; padding: 4px 10px; text-align: left; font-family: monospace; }
  #contract pre { background: #f6f6f6; padding: 10px; overflow-x: auto; }
</style>
</head>
<body>
<div id="pipegate-docs" data-base="${escapeHtml(baseUrl)}" data-deployment="${escapeHtml(deploymentId)}">
  <header>
    <h1>Deployment <code>${escapeHtml(deploymentId)}</code></h1>
    <form id="key-form" autocomplete="off">
      <label for="api-key">API key</label>
      <input id="api-key" name="api-key" type="password" placeholder="pgk_…" spellcheck="false">
      <button id="load" type="submit">Show the API</button>
    </form>
    <p id="message" role="status">The key stays in this page: it is sent only with this page's own requests, and forgotten when you close it.</p>
  </header>
  <section id="contract" hidden></section>
  <div id="swagger-ui"></div>
</div>
<script src="${asset('swagger-ui-bundle.js')}"></script>
<script src="${asset(DOCS_SCRIPT_NAME)}"></script>
</body>
</html>
`;
}

/**
 * The page's behaviour, plain browser JavaScript (no build step): load the document with the
 * key, list the visible inputs and outputs and the snippets, then hand the document to Swagger
 * UI with the key pre-authorized. Everything is inserted as text, never as HTML.
 */
export const DOCS_SCRIPT = `'use strict';
(function () {
  var root = document.getElementById('pipegate-docs');
  var base = root.getAttribute('data-base');
  var id = root.getAttribute('data-deployment');
  var form = document.getElementById('key-form');
  var input = document.getElementById('api-key');
  var message = document.getElementById('message');
  var contract = document.getElementById('contract');
  var apiKey = '';
  var INLINE_MAX = ${INLINE_ASSET_BODY_MAX_BYTES};

  function el(tag, text, children) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }
  function at(x, path) {
    return path.reduce(function (v, k) { return v && typeof v === 'object' ? v[k] : undefined; }, x);
  }
  function table(headings, rows) {
    return el('table', null, [
      el('thead', null, [el('tr', null, headings.map(function (h) { return el('th', h); }))]),
      el('tbody', null, rows.map(function (r) { return el('tr', null, r.map(function (c) { return el('td', c); })); })),
    ]);
  }

  // The per-deployment document types each output by what its contract recorded (RAW or ASSET);
  // a contract published before that was recorded gives either.
  function outputKind(schema) {
    var name = String(at(schema, ['$ref']) || '').split('/').pop();
    if (name === 'AssetOutputValue') return 'file (ASSET: a link)';
    if (name === 'RawOutputValue') return 'value (RAW)';
    return 'value (RAW) or file (ASSET)';
  }

  function showContract(spec) {
    var schemas = at(spec, ['components', 'schemas']) || {};
    var inputs = at(schemas, ['DeploymentExecutionRequest', 'properties', 'workflow_input', 'properties']) || {};
    var outputs = at(schemas, ['DeploymentExecutionResult', 'properties', 'response_data', 'properties']) || {};
    contract.textContent = '';
    contract.appendChild(el('h2', 'Inputs'));
    var assetIds = Object.keys(inputs).filter(function (k) { return at(inputs[k], ['properties', 'value_type', 'const']) === 'ASSET'; });
    contract.appendChild(table(['id', 'type', 'published value'], Object.keys(inputs).map(function (k) {
      var value = at(inputs[k], ['properties', 'value']) || {};
      if (assetIds.indexOf(k) >= 0) return [k, 'asset', 'a file (' + String(value['default'] || '').length + ' characters as a data URI)'];
      return [k, value.format === 'uri' ? 'reference' : value.type, JSON.stringify(value['default'])];
    })));
    if (assetIds.length > 0) contract.appendChild(filesForm(assetIds, inputs));
    contract.appendChild(el('h2', 'Outputs'));
    contract.appendChild(table(['id', 'type'], Object.keys(outputs).map(function (k) { return [k, outputKind(outputs[k])]; })));
    var samples = at(spec, ['paths', '/v1/deployments/' + id + '/executions', 'post', 'x-codeSamples']) || [];
    samples.forEach(function (s) {
      contract.appendChild(el('h3', s.label || s.lang));
      contract.appendChild(el('pre', s.source));
    });
    contract.hidden = false;
  }

  // Try it with files: each chosen file goes inline as a data URI, as the execute route takes it
  // up to its inline limit. Larger files need the uploads route's PUT to object storage, which
  // this page's content security policy (connect-src 'self') does not allow.
  function filesForm(ids, inputs) {
    var box = el('form', null, [el('h2', 'Try it with files')]);
    box.id = 'files-form';
    var pickers = ids.map(function (k) {
      var picker = el('input');
      picker.type = 'file';
      picker.id = 'file-' + k;
      picker.setAttribute('data-input', k);
      var label = el('label', k + ' ');
      label.htmlFor = picker.id;
      var about = el('small', ' ' + (inputs[k].description || ''));
      box.appendChild(el('p', null, [label, picker, about]));
      return picker;
    });
    var send = el('button', 'Execute with these files');
    send.type = 'submit';
    send.id = 'files-send';
    var out = el('pre');
    out.id = 'files-result';
    box.appendChild(send);
    box.appendChild(out);
    box.addEventListener('submit', function (event) {
      event.preventDefault();
      var chosen = pickers.filter(function (p) { return p.files && p.files.length > 0; });
      if (chosen.length === 0) { out.textContent = 'Choose a file first.'; return; }
      out.textContent = 'Reading…';
      Promise.all(chosen.map(function (p) {
        return new Promise(function (resolve, reject) {
          var reader = new FileReader();
          reader.onload = function () { resolve([p.getAttribute('data-input'), reader.result]); };
          reader.onerror = function () { reject(new Error('Could not read ' + p.files[0].name + '.')); };
          reader.readAsDataURL(p.files[0]);
        });
      })).then(function (pairs) {
        var workflowInput = {};
        pairs.forEach(function (pair) { workflowInput[pair[0]] = { value: pair[1], value_type: 'ASSET' }; });
        var body = JSON.stringify({ workflow_input: workflowInput });
        var size = new Blob([body]).size;
        if (size > INLINE_MAX) {
          throw new Error('These files make a request of ' + size + ' bytes, over the ' + INLINE_MAX + ' bytes this page sends inline. ' +
            'Send larger files through the uploads route (POST /v1/deployments/' + id + '/uploads/, then PUT the bytes), e.g. with: pipegate execute ' + id + ' --input <id>=@<file>');
        }
        out.textContent = 'Sending…';
        return fetch(base + '/v1/deployments/' + encodeURIComponent(id) + '/executions/', {
          method: 'POST',
          headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
          body: body,
        }).then(function (r) {
          return r.text().then(function (text) { out.textContent = 'HTTP ' + r.status + '\\n' + text; });
        });
      }).catch(function (e) { out.textContent = e.message; });
    });
    return box;
  }

  function render(spec, key) {
    showContract(spec);
    var ui = window.SwaggerUIBundle({
      spec: spec,
      dom_id: '#swagger-ui',
      tryItOutEnabled: true,
      docExpansion: 'list',
      defaultModelsExpandDepth: -1,
      onComplete: function () { ui.preauthorizeApiKey('ApiKeyHeader', key); },
    });
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var key = input.value.trim();
    if (!key) { message.textContent = 'Enter the API key of this deployment.'; return; }
    message.textContent = 'Loading…';
    fetch(base + '/v1/deployments/' + encodeURIComponent(id) + '/openapi.json', { headers: { 'X-API-Key': key } })
      .then(function (r) {
        if (r.status === 401) throw new Error('That API key is not valid.');
        if (r.status === 404) throw new Error('This key does not open this deployment (or it was deleted).');
        if (!r.ok) throw new Error('Could not load the API (HTTP ' + r.status + ').');
        return r.json();
      })
      .then(function (spec) {
        message.textContent = '';
        apiKey = key;
        render(spec, key);
      })
      .catch(function (e) { message.textContent = e.message; });
  });
})();
`;

/**
 * A deployment's document with ready-to-run snippets on its execute operation, as
 * `x-codeSamples` (the extension Redoc and Scalar render; the docs page shows them itself).
 */
export function withCodeSamples<T extends { paths: Record<string, unknown> }>(doc: T, deploymentId: string): T {
  const s = deploymentSnippets(doc);
  const path = `/v1/deployments/${deploymentId}/executions`;
  const item = doc.paths[path] as { post?: Record<string, unknown> } | undefined;
  if (!item?.post) return doc;
  const samples = [
    { lang: 'Shell', label: 'curl', source: s.curl },
    { lang: 'TypeScript', label: 'TypeScript (openapi-fetch)', source: s.typescript },
    { lang: 'Python', label: 'Python (requests)', source: s.python },
  ];
  return { ...doc, paths: { ...doc.paths, [path]: { ...item, post: { ...item.post, 'x-codeSamples': samples } } } };
}
