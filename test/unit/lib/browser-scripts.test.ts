/**
 * The browser scripts the service serves (functions/browser/scripts.generated.ts) are the
 * bundle of functions/browser/*.ts as it stands: a change there without `npm run build:browser`
 * fails here, so `npm start`, the tests and the Lambda bundles never serve a stale script.
 */
import { readFileSync } from 'node:fs';
import { browserScriptsModule, GENERATED } from '../../../bin/build-browser';
import { BROWSER_SCRIPTS } from '../../../functions/browser/scripts.generated';
import { DOCS_SCRIPT } from '../../../functions/core/docs-page';
import { FORM_SCRIPT } from '../../../functions/core/form-page';

it('the committed bundle is a fresh build of functions/browser (else run: npm run build:browser)', async () => {
  const fresh = await browserScriptsModule();
  expect(readFileSync(GENERATED, 'utf8') === fresh).toBe(true);
});

it('the pages serve those scripts: self-contained, strict, with nothing left to import', () => {
  expect(FORM_SCRIPT).toBe(BROWSER_SCRIPTS.form);
  expect(DOCS_SCRIPT).toBe(BROWSER_SCRIPTS.docs);
  for (const script of [FORM_SCRIPT, DOCS_SCRIPT]) {
    expect(script.length).toBeGreaterThan(1000);
    expect(script).not.toMatch(/\brequire\(|\bimport\(|^import /m);
    // Everything runs under the page's CSP: no eval, no inline handlers built from strings.
    expect(script).not.toMatch(/\beval\(|new Function\(/);
  }
});
