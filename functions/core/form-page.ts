/**
 * A deployment's web form: the HTML is generated from the published contract (one labelled
 * control per visible input, with its published value and description; a place per visible
 * output), so it works as a plain page before its script runs. The script (served from this
 * origin, no inline script: the CSP forbids it) uploads files and sends the form through the form's own routes,
 * follows the execution by its event stream (long-polling it where the stream fails) and shows the outputs: text as text, images inline, video and audio
 * playable, other files as downloads. Everything from a request or a result is inserted as
 * text or an attribute, never as HTML. Pure.
 */
import { INLINE_ASSET_BODY_MAX_BYTES } from './assets';
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
  value_type: InputValueType;
  value: RawValue;
  description: string | null;
  media_types: string[] | null;
  max_bytes: number | null;
}

export interface FormPageArgs {
  baseUrl: string;
  token: string;
  title: string;
  description: string | null;
  fields: FormField[];
  outputs: { id: string; description: string | null }[];
  /**
   * How the page sends files: `direct` through the form's uploads route and a presigned PUT to
   * storage (the bucket's CORS rule allows this page's origin), `inline` in the run's body (up
   * to the inline limit) where no CORS rule names this origin.
   */
  uploads?: 'direct' | 'inline';
}

/** Ids are node ids (letters, digits, `_`, `-`), safe in an id attribute once prefixed. */
const controlId = (id: string): string => `in-${id}`;

const sizeText = (bytes: number): string =>
  bytes >= 1_048_576
    ? `${(bytes / 1_048_576).toFixed(bytes % 1_048_576 === 0 ? 0 : 1)} MB`
    : bytes >= 1024
      ? `${Math.round(bytes / 1024)} KB`
      : `${bytes} bytes`;

function control(f: FormField): string {
  const id = escapeHtml(controlId(f.id));
  const data = `data-input="${escapeHtml(f.id)}" data-type="${f.value_type}"`;
  const help = f.description ? `<p class="help" id="${id}-help">${escapeHtml(f.description)}</p>` : '';
  const described = f.description ? ` aria-describedby="${id}-help"` : '';
  const label = `<label for="${id}">${escapeHtml(f.id)}</label>`;
  const value = escapeHtml(String(f.value));
  switch (f.value_type) {
    case 'boolean':
      return `<div class="field check"><input type="checkbox" id="${id}" name="${escapeHtml(f.id)}" ${data}${f.value === true ? ' checked' : ''}${described}> ${label}${help}</div>`;
    case 'integer':
    case 'float':
      return `<div class="field">${label}${help}<input type="number" id="${id}" name="${escapeHtml(f.id)}" ${data} step="${f.value_type === 'integer' ? '1' : 'any'}" value="${value}" required${described}></div>`;
    case 'reference':
      return `<div class="field">${label}${help}<input type="url" id="${id}" name="${escapeHtml(f.id)}" ${data} value="${value}" required${described}></div>`;
    case 'asset': {
      const accept = f.media_types && f.media_types.length > 0 ? ` accept="${escapeHtml(f.media_types.join(','))}"` : '';
      const limits = [
        f.media_types && f.media_types.length > 0 ? `accepts ${f.media_types.join(', ')}` : null,
        f.max_bytes !== null ? `up to ${sizeText(f.max_bytes)}` : null,
      ].filter((x) => x !== null);
      const note = `<p class="help" id="${id}-note">${escapeHtml(limits.length ? `A file: ${limits.join(', ')}. ` : 'A file. ')}Leave empty to use the published one.</p>`;
      const max = f.max_bytes !== null ? ` data-max-bytes="${f.max_bytes}"` : '';
      return `<div class="field">${label}${help}${note}<input type="file" id="${id}" name="${escapeHtml(f.id)}" ${data}${accept}${max} aria-describedby="${f.description ? `${id}-help ` : ''}${id}-note"><img class="preview" alt="" hidden></div>`;
    }
    default: {
      const long = String(f.value).length > 60 || String(f.value).includes('\n');
      return long
        ? `<div class="field">${label}${help}<textarea id="${id}" name="${escapeHtml(f.id)}" ${data} rows="4"${described}>${value}</textarea></div>`
        : `<div class="field">${label}${help}<input type="text" id="${id}" name="${escapeHtml(f.id)}" ${data} value="${value}"${described}></div>`;
    }
  }
}

export function formPageHtml(a: FormPageArgs): string {
  const asset = (name: string) => escapeHtml(formFileUrl(a.baseUrl, a.token, name));
  const outputs = a.outputs
    .map(
      (o) =>
        `<section class="output" data-output="${escapeHtml(o.id)}" aria-labelledby="out-${escapeHtml(o.id)}"><h3 id="out-${escapeHtml(o.id)}">${escapeHtml(o.id)}</h3>${
          o.description ? `<p class="help">${escapeHtml(o.description)}</p>` : ''
        }<div class="value"></div></section>`,
    )
    .join('\n');
  return `${pageStart(a.title)}
<link rel="stylesheet" href="${asset(FORM_STYLE_NAME)}">
<script src="${asset(FORM_SCRIPT_NAME)}" defer></script>
</head>
<body>
<main id="pipegate-form" data-form="${escapeHtml(formUrl(a.baseUrl, a.token))}" data-inline-max="${INLINE_ASSET_BODY_MAX_BYTES}" data-uploads="${a.uploads ?? 'inline'}">
<h1>${escapeHtml(a.title)}</h1>
${a.description ? `<p class="about">${escapeHtml(a.description)}</p>` : ''}
<form id="run-form" novalidate>
${a.fields.map(control).join('\n')}
<button id="run" type="submit">Run</button>
</form>
<p id="progress" role="status" aria-live="polite"></p>
<progress id="upload-progress" max="100" value="0" aria-label="Upload" hidden></progress>
<p id="failure" role="alert" hidden></p>
<h2 id="outputs-heading" hidden>Outputs</h2>
<div id="outputs" hidden>
${outputs}
</div>
</main>
</body>
</html>
`;
}

export const FORM_STYLE = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1a1a1a;background:#fafafa}
main{max-width:42rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}
.about{margin:0 0 1rem;white-space:pre-line}
.field{margin:0 0 1rem}
.field label{display:block;font-weight:600}
.field.check label{display:inline;font-weight:600}
.help{margin:.1rem 0 .3rem;color:#444;font-size:.9rem}
input[type=text],input[type=number],input[type=url],textarea{width:100%;padding:.5rem;font:inherit;border:1px solid #767676;border-radius:4px;background:#fff}
input[type=file]{max-width:100%}
.preview{display:block;max-width:8rem;max-height:8rem;margin-top:.4rem}
button{font:inherit;padding:.6rem 1.6rem;border:0;border-radius:4px;background:#0b5cad;color:#fff;cursor:pointer}
button[disabled]{background:#5a7fa6;cursor:progress}
#progress{min-height:1.5em}
#upload-progress{width:100%}
#failure{color:#a40000;font-weight:600}
.output{margin:0 0 1rem;padding:.75rem;background:#fff;border:1px solid #ddd;border-radius:4px}
.output h3{margin:0 0 .3rem;font-size:1rem}
.output pre{margin:0;white-space:pre-wrap;word-break:break-word;font:inherit}
.output img,.output video{display:block;max-width:100%;height:auto}
`;

/**
 * The page's behaviour, plain browser JavaScript (served as it is, like the docs page's): read
 * the controls, upload files straight to storage (the form's uploads route, then a presigned PUT
 * with its progress shown) or, where the bucket allows no PUT from this origin, send them inline
 * as data URIs (up to the inline limit), POST the execution,
 * follow it node by node by its event stream (or, where that fails, long-poll it with `Prefer:
 * wait`), show the outputs. A refused request shows the service's own
 * `detail`; losing the service several times in a row ends the wait with a message.
 */
export const FORM_SCRIPT = `'use strict';
(function () {
  var root = document.getElementById('pipegate-form');
  var formUrl = root.getAttribute('data-form');
  var inlineMax = Number(root.getAttribute('data-inline-max'));
  var direct = root.getAttribute('data-uploads') === 'direct';
  var bar = document.getElementById('upload-progress');
  var form = document.getElementById('run-form');
  var run = document.getElementById('run');
  var progress = document.getElementById('progress');
  var failure = document.getElementById('failure');
  var outputs = document.getElementById('outputs');
  var outputsHeading = document.getElementById('outputs-heading');
  var WAIT = 20;
  var MAX_MISSES = 5;
  // The stream's first event comes at once (its pending status); without it by then, poll.
  var FIRST_EVENT_MS = 10000;
  var MAX_STREAM_ERRORS = 3;

  function el(tag, text) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fail(message) {
    failure.textContent = message;
    failure.hidden = false;
    progress.textContent = '';
    run.disabled = false;
  }
  function detailOf(body, status) {
    if (body && typeof body.detail === 'string') return body.detail;
    if (body && Array.isArray(body.detail)) return body.detail.map(function (p) { return p.path + ': ' + p.reason; }).join('; ');
    if (body && typeof body.error === 'string') return body.error;
    return 'HTTP ' + status;
  }
  function call(url, options) {
    return fetch(url, options).then(function (r) {
      return r.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (r.status === 429) throw new Error('Too many runs right now: ' + detailOf(body, r.status) + '.');
        if (r.status === 404) throw new Error('This form is no longer available.');
        if (!r.ok) throw new Error(detailOf(body, r.status));
        return body;
      });
    });
  }

  Array.prototype.forEach.call(form.querySelectorAll('input[type=file]'), function (picker) {
    picker.addEventListener('change', function () {
      var preview = picker.parentNode.querySelector('.preview');
      var file = picker.files && picker.files[0];
      if (!preview) return;
      if (file && /^image\\//.test(file.type)) {
        preview.src = URL.createObjectURL(file);
        preview.alt = 'Preview of ' + file.name;
        preview.hidden = false;
      } else {
        preview.hidden = true;
      }
    });
  });

  function readFile(picker) {
    var file = picker.files[0];
    var max = Number(picker.getAttribute('data-max-bytes') || 0);
    if (max > 0 && file.size > max) return Promise.reject(new Error(picker.name + ': ' + file.name + ' is ' + file.size + ' bytes; this input takes at most ' + max + '.'));
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(reader.result); };
      reader.onerror = function () { reject(new Error('Could not read ' + file.name + '.')); };
      reader.readAsDataURL(file);
    });
  }

  function checkSize(picker) {
    var file = picker.files[0];
    var max = Number(picker.getAttribute('data-max-bytes') || 0);
    if (max > 0 && file.size > max) throw new Error(picker.name + ': ' + file.name + ' is ' + file.size + ' bytes; this input takes at most ' + max + '.');
    return file;
  }

  // One file at a time, so the bar shows the bytes of all of them: sent so far over the total.
  function putFile(put, file, done, total) {
    return new Promise(function (resolve, reject) {
      var xhr = new XMLHttpRequest();
      xhr.open('PUT', put.upload_url);
      Object.keys(put.headers || {}).forEach(function (h) {
        // The browser sets Content-Length itself (it is signed: the file's exact size).
        if (h.toLowerCase() !== 'content-length') xhr.setRequestHeader(h, put.headers[h]);
      });
      xhr.upload.onprogress = function (e) {
        bar.value = Math.floor((100 * (done + e.loaded)) / total);
        progress.textContent = 'Uploading ' + file.name + '… ' + bar.value + '%';
      };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) resolve();
        else reject(new Error('Storage refused ' + file.name + ' (HTTP ' + xhr.status + ').'));
      };
      xhr.onerror = function () { reject(new Error('Could not upload ' + file.name + ': storage cannot be reached.')); };
      xhr.send(file);
    });
  }

  function upload(pickers) {
    var files = pickers.map(checkSize);
    var total = files.reduce(function (n, f) { return n + f.size; }, 0) || 1;
    var done = 0;
    var assets = [];
    bar.value = 0;
    bar.hidden = false;
    return files.reduce(function (chain, file, i) {
      return chain.then(function () {
        var type = file.type || 'application/octet-stream';
        return call(formUrl + '/uploads', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ media_type: type, bytes: file.size }) });
      }).then(function (put) {
        return putFile(put, file, done, total).then(function () {
          done += file.size;
          assets[i] = put.asset;
        });
      });
    }, Promise.resolve()).then(function () {
      bar.hidden = true;
      return assets;
    }, function (e) {
      bar.hidden = true;
      throw e;
    });
  }

  function collect() {
    var input = {};
    var pending = [];
    var pickers = [];
    Array.prototype.forEach.call(form.querySelectorAll('[data-input]'), function (c) {
      var id = c.getAttribute('data-input');
      var type = c.getAttribute('data-type');
      if (type === 'asset') {
        if (c.files && c.files.length > 0) {
          if (direct) pickers.push(c);
          else pending.push(readFile(c).then(function (uri) { input[id] = { value: uri, value_type: 'ASSET' }; }));
        }
      } else if (type === 'boolean') {
        input[id] = { value: c.checked, value_type: 'RAW' };
      } else if (type === 'integer' || type === 'float') {
        if (c.value.trim() === '' || !isFinite(Number(c.value))) throw new Error(id + ' must be a number.');
        input[id] = { value: Number(c.value), value_type: 'RAW' };
      } else if (type === 'reference') {
        input[id] = { value: c.value.trim(), value_type: 'REFERENCE' };
      } else {
        input[id] = { value: c.value, value_type: 'RAW' };
      }
    });
    if (pickers.length > 0) {
      pending.push(upload(pickers).then(function (assets) {
        pickers.forEach(function (c, i) { input[c.getAttribute('data-input')] = assets[i]; });
      }));
    }
    return Promise.all(pending).then(function () { return input; });
  }

  function show(result) {
    var data = result.response_data || {};
    Array.prototype.forEach.call(outputs.querySelectorAll('.output'), function (section) {
      var id = section.getAttribute('data-output');
      var box = section.querySelector('.value');
      box.textContent = '';
      var out = Object.prototype.hasOwnProperty.call(data, id) ? data[id] : null;
      if (!out) { box.appendChild(el('p', '(no value)')); return; }
      if (out.value_type !== 'ASSET') { box.appendChild(el('pre', out.value)); return; }
      var type = String(out.media_type || '');
      var media;
      if (/^image\\//.test(type) && type !== 'image/svg+xml') {
        media = el('img');
        media.alt = id;
        media.src = out.value;
      } else if (/^video\\//.test(type) || /^audio\\//.test(type)) {
        media = el(/^video/.test(type) ? 'video' : 'audio');
        media.controls = true;
        media.src = out.value;
        media.setAttribute('aria-label', id);
      }
      if (media) box.appendChild(media);
      var link = el('a', 'Download ' + id + ' (' + type + ', ' + out.bytes + ' bytes)');
      link.href = out.value;
      link.setAttribute('download', id);
      box.appendChild(el('p')).appendChild(link);
    });
    outputsHeading.hidden = false;
    outputs.hidden = false;
  }

  // The end of a run, from the stream's done or a poll: true once it is shown.
  function finish(body) {
    if (body.status === 'completed') {
      progress.textContent = 'Done in ' + (body.completion_duration / 1000).toFixed(1) + ' s.';
      run.disabled = false;
      show(body);
      return true;
    }
    if (body.status === 'failed' || body.status === 'cancelled') {
      var reason = body.error_message || 'no reason given';
      fail('The run ' + body.status + ': ' + reason + (/[.!?]$/.test(reason) ? '' : '.'));
      return true;
    }
    return false;
  }

  // Follows the run by its event stream, node by node; falls back to the long poll when the
  // browser has no EventSource, the stream is refused (404, 429, 503), nothing arrives in time
  // (a proxy that buffers), or it keeps dropping. The poll then ends it, whatever happened.
  function follow(url) {
    if (typeof EventSource !== 'function') return poll(url, 0);
    return new Promise(function (resolve) {
      var source = new EventSource(url + '/events');
      var over = false;
      var errors = 0;
      // Node ids seen finished: a run again after a crash finishes some nodes twice.
      var finishedIds = Object.create(null);
      var finished = 0;
      var timer = setTimeout(fallback, FIRST_EVENT_MS);
      function stop() {
        over = true;
        clearTimeout(timer);
        source.close();
      }
      function fallback() {
        if (over) return;
        stop();
        resolve(poll(url, 0));
      }
      function heard(m) {
        errors = 0;
        clearTimeout(timer);
        try { return JSON.parse(m.data); } catch (e) { return {}; }
      }
      source.addEventListener('status', function (m) {
        var d = heard(m);
        if (d.status === 'pending') progress.textContent = 'Waiting for its turn…';
        else if (d.status === 'running') progress.textContent = 'Running…';
      });
      source.addEventListener('node', function (m) {
        var d = heard(m);
        if (typeof d.total === 'number') { progress.textContent = 'Running… ' + d.done + ' of ' + d.total + ' steps done.'; return; }
        if (d.state === 'started') { progress.textContent = 'Running ' + d.node_id + '… (' + finished + ' steps done)'; return; }
        if (d.state === 'finished' && finishedIds[d.node_id] !== true) {
          finishedIds[d.node_id] = true;
          finished += 1;
        }
        progress.textContent = (d.state === 'failed' ? d.node_id + ' failed' : 'Finished ' + d.node_id) + ' (' + finished + ' steps done)';
      });
      source.addEventListener('done', function (m) {
        var d = heard(m);
        stop();
        resolve(finish(d) ? undefined : poll(url, 0));
      });
      // The browser reconnects by itself (with Last-Event-ID) after a drop; a refusal closes it.
      source.onerror = function () {
        if (over) return;
        errors += 1;
        if (source.readyState === EventSource.CLOSED || errors >= MAX_STREAM_ERRORS) fallback();
      };
    });
  }

  function poll(url, misses) {
    return fetch(url, { headers: { Prefer: 'wait=' + WAIT } }).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (body) {
        if (r.status === 404) throw new Error('This run can no longer be read (the form was changed or taken down).');
        if (!r.ok || !body) throw Object.assign(new Error('HTTP ' + r.status), { transient: r.status >= 500 });
        return body;
      });
    }, function () {
      throw Object.assign(new Error('The service cannot be reached.'), { transient: true });
    }).then(function (body) {
      if (finish(body)) return;
      progress.textContent = body.status === 'running' ? 'Running…' : 'Waiting for its turn…';
      return poll(url, 0);
    }, function (e) {
      if (e.transient && misses + 1 < MAX_MISSES) {
        progress.textContent = 'Lost contact with the service; trying again…';
        return new Promise(function (resolve) { setTimeout(resolve, 1000 * (misses + 1)); }).then(function () { return poll(url, misses + 1); });
      }
      throw e;
    });
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    failure.hidden = true;
    outputs.hidden = true;
    outputsHeading.hidden = true;
    run.disabled = true;
    progress.textContent = 'Sending…';
    Promise.resolve().then(collect).then(function (input) {
      var body = JSON.stringify({ workflow_input: input });
      if (new Blob([body]).size > inlineMax) throw new Error('The files are too large together: a run takes at most ' + inlineMax + ' bytes of files.');
      return call(formUrl + '/executions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body });
    }).then(function (accepted) {
      progress.textContent = 'Waiting for its turn…';
      return follow(accepted.status_url);
    }).catch(function (e) { fail(e.message); });
  });
})();
`;
