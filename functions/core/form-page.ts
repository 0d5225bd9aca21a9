/**
 * A deployment's web form: the HTML is generated from the published contract (one labelled
 * control per visible input, with its published value and description; a place per visible
 * output), so it works as a plain page before its script runs. The script (served from this
 * origin, no inline script: the CSP forbids it) uploads files and sends the form through the form's own routes,
 * follows the execution by its event stream (long-polling it where the stream fails) and shows the outputs: text as text, images inline, video and audio
 * playable, other files as downloads. Everything from a request or a result is inserted as
 * text or an attribute, never as HTML. Pure.
 */
import { createHash } from 'node:crypto';
import { BROWSER_SCRIPTS } from '../browser/scripts.generated';
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOAD_MAX_BYTES } from './assets';
import { ANSWER_HINT, ANSWER_LABEL, fileHint, labelOf, WAIT_HINT } from './form-text';
import { FORM_SCRIPT_NAME, FORM_STYLE_NAME, formFileUrl, formUrl } from './form-link';
import { escapeHtml, pageStart } from './html';
import type { InputValueType, RawValue } from './types';

export { FORM_SCRIPT_NAME, FORM_STYLE_NAME };

export const FORM_FILES: Readonly<Record<string, string>> = {
  [FORM_SCRIPT_NAME]: 'text/javascript; charset=utf-8',
  [FORM_STYLE_NAME]: 'text/css; charset=utf-8',
};

/**
 * Scripts and styles from this origin only; calls, images and media from it too (output links
 * are this service's /v1/assets/ URLs); `blob:` for the preview of a picked picture, `data:` for
 * the empty icon that keeps the browser from asking for /favicon.ico. A page that uploads
 * straight to storage may also connect to the storage origin (where its presigned PUTs go).
 */
export function formPageCsp(storageOrigin: string | null = null): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "media-src 'self'",
    storageOrigin === null ? "connect-src 'self'" : `connect-src 'self' ${storageOrigin}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export const FORM_PAGE_CSP = formPageCsp();

export interface FormField {
  id: string;
  /** The definition's `label`, shown instead of the id (which becomes words when there is none). */
  label: string | null;
  value_type: InputValueType;
  value: RawValue;
  description: string | null;
  media_types: string[] | null;
  max_bytes: number | null;
}

export interface FormOutput {
  id: string;
  label: string | null;
  description: string | null;
}

/** A wait node published visible: the page shows it as a form of its own while the run waits on it. */
export interface FormWait {
  id: string;
  label: string | null;
  description: string | null;
  /** What its answer holds, field by field; null: any JSON object, typed as text. */
  fields: { id: string; label: string | null; description: string | null; value_type: 'string' | 'integer' | 'float' | 'boolean' }[] | null;
}

export interface FormPageArgs {
  baseUrl: string;
  token: string;
  title: string;
  description: string | null;
  fields: FormField[];
  outputs: FormOutput[];
  /** Visible wait nodes: each a form the person answers while the run waits on it. */
  waits?: FormWait[];
  /**
   * How many steps (transform, http and delay nodes) a run takes, for "Step 2 of 3"; null where
   * the deployment shows callers counts only (its events then say the total themselves).
   */
  steps?: number | null;
  /**
   * How the page sends files: `direct` through the form's uploads route and a presigned PUT to
   * storage (the bucket's CORS rule allows this page's origin), `inline` in the run's body (up
   * to the inline limit) where no CORS rule names this origin.
   */
  uploads?: 'direct' | 'inline';
}

/** Ids are node ids (letters, digits, `_`, `-`), safe in an id attribute once prefixed (a wait's fields by the wait's id too). */
const controlId = (id: string, prefix = ''): string => `${prefix}in-${id}`;

/**
 * A file sent straight to storage may be as large as the uploads route takes: the page says so
 * and checks it where the input sets no smaller limit. (Inline, every file of a run shares the
 * inline limit, which the page checks for them together.)
 */
const withUploadLimit = (f: FormField, uploads: 'direct' | 'inline'): FormField =>
  f.value_type === 'asset' && f.max_bytes === null && uploads === 'direct' ? { ...f, max_bytes: UPLOAD_MAX_BYTES } : f;

function control(f: FormField, prefix = ''): string {
  const id = escapeHtml(controlId(f.id, prefix));
  const label = labelOf(f.id, f.label);
  const data = [
    `data-input="${escapeHtml(f.id)}"`,
    `data-type="${f.value_type}"`,
    `data-label="${escapeHtml(label)}"`,
    f.media_types && f.media_types.length > 0 ? `data-media-types="${escapeHtml(f.media_types.join(','))}"` : '',
    f.max_bytes !== null ? `data-max-bytes="${f.max_bytes}"` : '',
  ]
    .filter((x) => x !== '')
    .join(' ');
  const hints: string[] = [];
  if (f.description) hints.push(`<p class="hint" id="${id}-hint">${escapeHtml(f.description)}</p>`);
  if (f.value_type === 'asset') hints.push(`<p class="hint" id="${id}-note">${escapeHtml(fileHint(f))}</p>`);
  const describedBy = [f.description ? `${id}-hint` : null, f.value_type === 'asset' ? `${id}-note` : null].filter((x) => x !== null);
  const described = describedBy.length > 0 ? ` aria-describedby="${describedBy.join(' ')}"` : '';
  const error = `<p class="error" id="${id}-error" hidden></p>`;
  const labelTag = `<label for="${id}">${escapeHtml(label)}</label>`;
  const name = escapeHtml(f.id);
  const value = escapeHtml(String(f.value));
  const field = (inner: string, cls = 'field') => `<div class="${cls}" id="${escapeHtml(prefix)}field-${name}">${inner}</div>`;
  switch (f.value_type) {
    case 'boolean':
      return field(
        `<input type="checkbox" id="${id}" name="${name}" ${data}${f.value === true ? ' checked' : ''}${described}><div>${labelTag}${hints.join('')}${error}</div>`,
        'field check',
      );
    case 'integer':
    case 'float':
      // Text with a numeric keyboard, as GOV.UK advises: a number input drops what it cannot parse.
      return field(
        `${labelTag}${hints.join('')}${error}<input type="text" inputmode="${f.value_type === 'integer' ? 'numeric' : 'decimal'}" id="${id}" name="${name}" ${data} value="${value}" autocomplete="off" spellcheck="false"${described}>`,
      );
    case 'reference':
      return field(
        `${labelTag}${hints.join('')}${error}<input type="url" id="${id}" name="${name}" ${data} value="${value}" autocomplete="url" spellcheck="false"${described}>`,
      );
    case 'asset': {
      const accept = f.media_types && f.media_types.length > 0 ? ` accept="${escapeHtml(f.media_types.join(','))}"` : '';
      return field(
        `${labelTag}${hints.join('')}${error}<input type="file" id="${id}" name="${name}" ${data}${accept}${described}><img class="preview" alt="" hidden>`,
      );
    }
    default: {
      const long = String(f.value).length > 60 || String(f.value).includes('\n');
      return field(
        long
          ? `${labelTag}${hints.join('')}${error}<textarea id="${id}" name="${name}" ${data} rows="4"${described}>${value}</textarea>`
          : `${labelTag}${hints.join('')}${error}<input type="text" id="${id}" name="${name}" ${data} value="${value}"${described}>`,
      );
    }
  }
}

/** A wait's own id prefix for its fields' element ids, apart from the run's inputs. */
export const waitPrefix = (waitId: string): string => `wait-${waitId}-`;

/**
 * A visible wait node as a form of its own, hidden until the run waits on it: a labelled control
 * per field (or one text box for a JSON object), its problems at its fields, and a button.
 */
function waitSection(w: FormWait): string {
  const id = escapeHtml(w.id);
  const prefix = waitPrefix(w.id);
  const title = escapeHtml(labelOf(w.id, w.label));
  const controls =
    w.fields === null
      ? control(
          {
            id: 'answer',
            label: ANSWER_LABEL,
            value_type: 'string',
            value: '{}',
            description: ANSWER_HINT,
            media_types: null,
            max_bytes: null,
          },
          prefix,
        )
      : w.fields
          .map((f) =>
            control(
              {
                id: f.id,
                label: f.label,
                value_type: f.value_type,
                value: f.value_type === 'boolean' ? false : '',
                description: f.description,
                media_types: null,
                max_bytes: null,
              },
              prefix,
            ),
          )
          .join('\n');
  const json = w.fields === null ? ' data-json="true"' : '';
  return `<section class="wait" id="wait-${id}" data-wait="${id}" data-label="${title}"${json} aria-labelledby="wait-${id}-title" hidden>
<h2 id="wait-${id}-title" tabindex="-1">${title}</h2>
<p class="hint">${escapeHtml(WAIT_HINT)}</p>
${w.description ? `<p class="hint">${escapeHtml(w.description)}</p>` : ''}<p class="hint deadline" id="wait-${id}-deadline"></p>
<form class="wait-form" novalidate>
${controls}
<button type="submit">Send</button>
</form>
</section>`;
}

export function formPageHtml(a: FormPageArgs): string {
  const asset = (name: string) => escapeHtml(formFileUrl(a.baseUrl, a.token, name));
  const outputs = a.outputs
    .map((o) => {
      const id = escapeHtml(o.id);
      return `<section class="output" data-output="${id}" data-label="${escapeHtml(labelOf(o.id, o.label))}" aria-labelledby="out-${id}"><h3 id="out-${id}">${escapeHtml(labelOf(o.id, o.label))}</h3>${
        o.description ? `<p class="hint">${escapeHtml(o.description)}</p>` : ''
      }<div class="value"></div></section>`;
    })
    .join('\n');
  const steps = a.steps === null || a.steps === undefined ? '' : ` data-steps="${a.steps}"`;
  return `${pageStart(a.title)}
<link rel="stylesheet" href="${asset(FORM_STYLE_NAME)}">
<script src="${asset(FORM_SCRIPT_NAME)}" defer></script>
</head>
<body>
<main id="pipegate-form" data-form="${escapeHtml(formUrl(a.baseUrl, a.token))}" data-inline-max="${INLINE_ASSET_BODY_MAX_BYTES}" data-uploads="${a.uploads ?? 'inline'}"${steps}>
<div id="error-summary" class="error-summary" tabindex="-1" role="alert" aria-labelledby="error-summary-title" hidden>
<h2 id="error-summary-title">There is a problem</h2>
<ul id="error-list"></ul>
</div>
<h1>${escapeHtml(a.title)}</h1>
${a.description ? `<p class="about">${escapeHtml(a.description)}</p>` : ''}
<form id="run-form" novalidate>
${a.fields.map((f) => control(withUploadLimit(f, a.uploads ?? 'inline'))).join('\n')}
<button id="run" type="submit">Run</button>
</form>
<p id="progress" role="status" aria-live="polite"></p>
<progress id="upload-progress" max="100" value="0" aria-label="Upload" hidden></progress>
<p id="failure" role="alert" hidden></p>
${(a.waits ?? []).map(waitSection).join('\n')}
<h2 id="outputs-heading" hidden>Results</h2>
<div id="outputs" hidden>
${outputs}
</div>
</main>
</body>
</html>
`;
}

/**
 * What a link that opens no form shows (mistyped, rotated, disabled, deleted: alike, so it tells
 * nothing of which): a page a person can read, not the API's JSON. No script; its one style
 * block is allowed by its hash.
 */
const NOT_FOUND_STYLE =
  'body{margin:0;font:18px/1.5 system-ui,sans-serif;color:#0b0c0c;background:#f3f2f1}main{max-width:40rem;margin:0 auto;padding:1.5rem 1rem;background:#fff;min-height:100vh}h1{font-size:1.75rem;line-height:1.2}';

export function formNotFoundHtml(): string {
  return `${pageStart('This link does not open a form')}
<style>${NOT_FOUND_STYLE}</style>
</head>
<body>
<main>
<h1>This link does not open a form</h1>
<p>The link may have been copied with a character missing, or the form may have been changed or taken down by the person who shares it.</p>
<p>Check that you copied the whole link. If it still does not work, ask whoever sent it for a new link.</p>
</main>
</body>
</html>
`;
}

export const FORM_NOT_FOUND_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(NOT_FOUND_STYLE).digest('base64')}'`,
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const FORM_STYLE = `*{box-sizing:border-box}
body{margin:0;font:18px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#0b0c0c;background:#f3f2f1}
main{max-width:40rem;min-height:100vh;margin:0 auto;padding:1rem 1rem 3rem;background:#fff}
h1{font-size:1.75rem;line-height:1.2;margin:.5rem 0 .75rem}
.about{margin:0 0 1.5rem;white-space:pre-line}
.field{margin:0 0 1.5rem}
.field label{display:block;font-weight:700;margin:0 0 .25rem}
.hint{margin:0 0 .5rem;color:#505a5f}
.error{margin:0 0 .5rem;color:#d4351c;font-weight:700}
.field-error{border-left:5px solid #d4351c;padding-left:.75rem}
input[type=text],input[type=url],textarea{display:block;width:100%;min-height:2.75rem;padding:.4rem .5rem;font:inherit;border:2px solid #0b0c0c;border-radius:0;background:#fff;color:inherit}
.field-error input[type=text],.field-error input[type=url],.field-error textarea{border-color:#d4351c}
input[type=file]{display:block;width:100%;min-height:2.75rem;font:inherit}
input[type=file]::file-selector-button{min-height:2.75rem;margin:0 .75rem 0 0;padding:.4rem 1rem;font:inherit;font-weight:700;border:2px solid #0b0c0c;border-radius:0;background:#f3f2f1;color:#0b0c0c;cursor:pointer}
.check{display:flex;gap:.75rem;align-items:flex-start}
.check input{flex:none;width:2.75rem;height:2.75rem;margin:0;accent-color:#0b0c0c}
.check label{padding-top:.45rem}
:focus-visible{outline:3px solid #fd0;outline-offset:0;box-shadow:0 0 0 5px #0b0c0c}
.preview{display:block;max-width:8rem;max-height:8rem;margin-top:.5rem}
button{min-height:2.75rem;font:inherit;font-weight:700;padding:.5rem 1.5rem;border:0;border-radius:0;background:#00703c;color:#fff;box-shadow:0 2px 0 #002d18;cursor:pointer}
button[disabled]{opacity:.6;cursor:progress}
.error-summary{margin:0 0 1.5rem;padding:1rem;border:5px solid #d4351c}
.error-summary:focus{outline:3px solid #fd0}
.error-summary h2{margin:0 0 .5rem;font-size:1.3rem}
.error-summary ul{margin:0;padding:0;list-style:none}
.error-summary a{display:inline-block;min-height:2.75rem;padding:.5rem 0;color:#d4351c;font-weight:700}
#progress{min-height:1.5em;font-weight:700}
#upload-progress{width:100%;height:1rem}
#failure{color:#d4351c;font-weight:700}
#outputs-heading{font-size:1.4rem;margin:1.5rem 0 .75rem}
.output{margin:0 0 1rem;padding:.75rem 1rem;border:1px solid #b1b4b6}
.output h3{margin:0 0 .3rem;font-size:1.1rem}
.output pre{margin:0;white-space:pre-wrap;word-break:break-word;font:inherit}
.output img,.output video{display:block;max-width:100%;height:auto;margin:0 0 .5rem}
.gallery{list-style:none;margin:0;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:1rem}
.gallery figure{margin:0}
.output audio{display:block;width:100%;margin:0 0 .5rem}
.output .link{display:inline-block;min-height:2.75rem;padding:.5rem 0;word-break:break-all;color:#1d70b8}
.wait{margin:1.5rem 0;padding:1rem;border:5px solid #1d70b8}
.wait h2{margin:0 0 .5rem;font-size:1.4rem}
.visually-hidden{position:absolute!important;width:1px!important;height:1px!important;margin:0!important;padding:0!important;overflow:hidden!important;clip:rect(0 0 0 0)!important;white-space:nowrap!important;border:0!important}
.output .download{display:inline-flex;align-items:center;min-height:2.75rem;padding:.4rem 1rem;border:2px solid #0b0c0c;color:#0b0c0c;font-weight:700;text-decoration:none}
`;

/** The page's behaviour: functions/browser/form.ts, bundled by `npm run build:browser`. */
export const FORM_SCRIPT = BROWSER_SCRIPTS.form;
