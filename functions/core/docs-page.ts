/**
 * A deployment's docs page: an HTML shell that asks for the caller's API key, then loads the
 * deployment's own OpenAPI document with it and renders it with Swagger UI, whose "try it"
 * sends the same key. The shell holds nothing about the deployment but its id, so it needs no
 * key to load; everything the deployment publishes is fetched with the key, through the
 * authorizer, like any caller request.
 */
import { BROWSER_SCRIPTS } from '../browser/scripts.generated';
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
<div id="pipegate-docs" data-base="${escapeHtml(baseUrl)}" data-deployment="${escapeHtml(deploymentId)}" data-inline-max="${INLINE_ASSET_BODY_MAX_BYTES}">
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

/** The page's behaviour: functions/browser/docs.ts, bundled by `npm run build:browser`. */
export const DOCS_SCRIPT = BROWSER_SCRIPTS.docs;

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
  const paths = { ...doc.paths, [path]: { ...item, post: { ...item.post, 'x-codeSamples': samples } } };
  // The MCP operation: a client's configuration, for agents.
  const mcpPath = `/v1/deployments/${deploymentId}/mcp`;
  const mcp = doc.paths[mcpPath] as { post?: Record<string, unknown> } | undefined;
  if (mcp?.post)
    paths[mcpPath] = { ...mcp, post: { ...mcp.post, 'x-codeSamples': [{ lang: 'JSON', label: 'MCP client', source: s.mcp }] } };
  return { ...doc, paths };
}
