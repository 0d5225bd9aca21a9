/**
 * The files of the deployment docs page that come from npm (swagger-ui-dist), never from a CDN.
 * Plain data, read by the docs handler (which serves them) and by the service stack (which
 * copies them beside that one function's bundle, so no other function carries them).
 */
export const DOCS_ASSETS_PACKAGE = 'swagger-ui-dist';

/** Folder beside a bundled function's index.js that holds the copied files. */
export const DOCS_ASSETS_DIR = 'docs-assets';

export const DOCS_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};
