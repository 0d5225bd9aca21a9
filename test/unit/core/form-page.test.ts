import fc from 'fast-check';
import { UPLOAD_MAX_BYTES } from '../../../functions/core/assets';
import { FORM_TOKEN_PATTERN, formHashMatches, formToken, formTokenHash } from '../../../functions/core/form-link';
import { FORM_NOT_FOUND_CSP, FORM_PAGE_CSP, formNotFoundHtml, formPageCsp, formPageHtml } from '../../../functions/core/form-page';

const base = { baseUrl: 'https://api.example.com/api', token: `pgf_${'a'.repeat(43)}`, title: 'T', description: null, outputs: [] };

describe('the form page', () => {
  it('inserts titles, descriptions and published values as text, never as markup', () => {
    const evil = '<script>alert(1)</script>"\'&';
    const html = formPageHtml({
      ...base,
      title: evil,
      description: evil,
      fields: [{ id: 'name', label: evil, value_type: 'string', value: evil, description: evil, media_types: null, max_bytes: null }],
      outputs: [{ id: 'out', label: evil, description: evil }],
    });
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;');
    // The only script is the page's own file, from its origin.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain(`<script src="${base.baseUrl}/v1/forms/${base.token}/files/pipegate-form.js" defer></script>`);
    expect(FORM_PAGE_CSP).toContain("script-src 'self'");
    expect(FORM_PAGE_CSP).not.toContain('unsafe');
  });

  it("shows each visible wait as a hidden section of its own: its fields' controls apart from the inputs', its words escaped", () => {
    const evil = '<b>x</b>';
    const html = formPageHtml({
      ...base,
      fields: [{ id: 'note', label: null, value_type: 'string', value: '', description: null, media_types: null, max_bytes: null }],
      waits: [
        {
          id: 'approval',
          label: evil,
          description: evil,
          fields: [
            { id: 'note', label: 'Note', description: null, value_type: 'string' },
            { id: 'ok', label: null, description: null, value_type: 'boolean' },
          ],
        },
        { id: 'answer_any', label: null, description: null, fields: null },
      ],
    });
    expect(html).toMatch(
      /<section class="wait" id="wait-approval" data-wait="approval" data-label="&lt;b&gt;x&lt;\/b&gt;" aria-labelledby="wait-approval-title" hidden>/,
    );
    expect(html).not.toContain('<b>x</b>');
    // The run's input and the wait's field of the same id are two controls, with their own ids.
    expect(html).toContain('id="in-note"');
    expect(html).toContain('id="wait-approval-in-note"');
    expect(html).toContain('id="wait-approval-field-ok"');
    expect(html).toContain('<label for="wait-approval-in-ok">Ok</label>');
    // A wait without fields takes a JSON object in one box.
    expect(html).toMatch(/<section class="wait" id="wait-answer_any" data-wait="answer_any" data-label="Answer any" data-json="true"/);
    expect(html).toContain('<label for="wait-answer_any-in-answer">Your answer</label>');
    expect(html.match(/<section class="wait"/g)).toHaveLength(2);
  });

  it('sends files inline unless told the bucket takes its PUTs; then it may connect to storage too', () => {
    expect(formPageHtml({ ...base, fields: [] })).toContain('data-uploads="inline"');
    expect(formPageHtml({ ...base, fields: [], uploads: 'direct' })).toContain('data-uploads="direct"');
    expect(FORM_PAGE_CSP).toContain("connect-src 'self';");
    expect(formPageCsp('https://b.s3.eu-west-1.amazonaws.com')).toContain("connect-src 'self' https://b.s3.eu-west-1.amazonaws.com;");
  });

  it('escapes any text (property)', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const html = formPageHtml({ ...base, title: text, description: text, fields: [], outputs: [] });
        const body = html.slice(html.indexOf('<main'));
        // Every < in the body is one of the page's own tags.
        return !/<(?!\/?(main|h1|p|form|button|h2|div|ul|body|html|progress)\b)/.test(body);
      }),
    );
  });

  it('gives each visible input a control of its kind, labelled with its label or its id as words', () => {
    const html = formPageHtml({
      ...base,
      fields: [
        { id: 'copies', label: null, value_type: 'integer', value: 3, description: null, media_types: null, max_bytes: null },
        { id: 'b', label: 'Loud?', value_type: 'boolean', value: true, description: null, media_types: null, max_bytes: null },
        {
          id: 'f',
          label: 'Your photo',
          value_type: 'asset',
          value: 'data:,',
          description: 'a photo',
          media_types: ['image/png'],
          max_bytes: 10_485_760,
        },
      ],
      outputs: [{ id: 'thumbnail_bytes', label: null, description: null }],
    });
    expect(html).toMatch(/<label for="in-copies">Copies<\/label>.*<input type="text" inputmode="numeric" id="in-copies"[^>]* value="3"/s);
    expect(html).toMatch(/<input type="checkbox" id="in-b"[^>]* checked[^>]*><div><label for="in-b">Loud\?<\/label>/);
    expect(html).toMatch(/<label for="in-f">Your photo<\/label>/);
    expect(html).toMatch(
      /<input type="file" id="in-f"[^>]*data-media-types="image\/png" data-max-bytes="10485760"[^>]*accept="image\/png"/,
    );
    // Kinds and sizes as people say them: no media type, no byte count, one unit.
    expect(html).toContain('A PNG image, 10.4 MB or smaller. If you choose none, the example file is used.');
    expect(html.replace(/<[^>]*>/g, '')).not.toMatch(/accepts|image\/|MiB|\d bytes/);
    expect(html).toContain('<h3 id="out-thumbnail_bytes">Thumbnail bytes</h3>');
    // A place for each field's problem, and the summary at the top.
    expect(html).toContain('<p class="error" id="in-copies-error" hidden></p>');
    expect(html.indexOf('id="error-summary"')).toBeLessThan(html.indexOf('<form'));
  });

  it('a file without a limit of its own is limited, and said to be, by the uploads route where the page uploads straight to storage', () => {
    const field = {
      id: 'f',
      label: null,
      value_type: 'asset' as const,
      value: 'data:,',
      description: null,
      media_types: null,
      max_bytes: null,
    };
    const direct = formPageHtml({ ...base, fields: [field], uploads: 'direct' });
    expect(direct).toContain(`data-max-bytes="${UPLOAD_MAX_BYTES}"`);
    expect(direct).toContain('A file, 104 MB or smaller.');
    const inline = formPageHtml({ ...base, fields: [field], uploads: 'inline' });
    expect(inline).not.toContain('data-max-bytes');
    expect(inline).toContain('A file. If you choose none');
  });

  it('a link that opens no form: a page a person can read, no script, its style allowed by hash alone', () => {
    const html = formNotFoundHtml();
    expect(html).toContain('<h1>This link does not open a form</h1>');
    expect(html).not.toContain('<script');
    expect(FORM_NOT_FOUND_CSP).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(FORM_NOT_FOUND_CSP).not.toContain('script-src');
  });
});

describe('the form link', () => {
  const key = Buffer.alloc(32, 7);
  const pepper = Buffer.alloc(32, 9);

  it('derives a well-formed token from the salt and the master key, different for every salt', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        const ta = formToken(a, key);
        return FORM_TOKEN_PATTERN.test(ta) && (a === b) === (ta === formToken(b, key));
      }),
    );
    expect(formToken('s', key)).not.toBe(formToken('s', Buffer.alloc(32, 8)));
  });

  it('matches a token only to its own hash', () => {
    const t = formToken('salt', key);
    expect(formHashMatches(formTokenHash(t, pepper), formTokenHash(t, pepper))).toBe(true);
    expect(formHashMatches(formTokenHash(`${t.slice(0, -1)}x`, pepper), formTokenHash(t, pepper))).toBe(false);
    expect(formHashMatches('', formTokenHash(t, pepper))).toBe(false);
  });
});
