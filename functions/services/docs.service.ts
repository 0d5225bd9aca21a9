/** The deployment docs page and its files (GET /v1/deployments/{id}/docs, GET /v1/docs/{asset}). */
import { AppError } from '../core/errors';
import { DOCS_ASSETS } from '../../lib/docs-assets';
import { DOCS_PAGE_CSP, DOCS_SCRIPT, DOCS_SCRIPT_NAME, docsPageHtml } from '../core/docs-page';
import { isUuid } from '../core/ids';
import type { RouteAnswer } from '../adapters/api';
import { readDocsAsset } from '../adapters/docs-assets';

/** Every file served under /v1/docs/, with its content type: Swagger UI's (lib/docs-assets.ts) and our script. */
const DOCS_FILES: Readonly<Record<string, string>> = {
  ...DOCS_ASSETS,
  [DOCS_SCRIPT_NAME]: 'text/javascript; charset=utf-8',
};

const PAGE_HEADERS = {
  'content-security-policy': DOCS_PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/**
 * The page for any well-formed deployment id: without the key it cannot tell whether the
 * deployment exists, and it shows nothing of it until the key has opened its document.
 */
export function docsPage(deploymentId: string, baseUrl: string): RouteAnswer {
  if (!isUuid(deploymentId)) throw new AppError('DeploymentNotFound');
  return {
    status: 200,
    headers: PAGE_HEADERS,
    text: { contentType: 'text/html; charset=utf-8', body: docsPageHtml(deploymentId, baseUrl) },
  };
}

export async function docsFile(name: string): Promise<RouteAnswer> {
  const contentType = DOCS_FILES[name];
  const body = name === DOCS_SCRIPT_NAME ? DOCS_SCRIPT : await readDocsAsset(name);
  if (!contentType || body === null || body === undefined) throw new AppError('RouteNotFound');
  return {
    status: 200,
    headers: { 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=3600' },
    text: { contentType, body },
  };
}
