/** What the web form says to people: sizes, kinds of file, problems, download names. */
import fc from 'fast-check';
import { assetRestrictionProblem } from '../../../functions/core/assets';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import type { Contract } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';
import {
  answerWords,
  deadlineWords,
  downloadName,
  jsonAnswer,
  waitingWords,
  extensionOf,
  formatName,
  fileHint,
  fileProblem,
  kindWords,
  itemsWords,
  labelOf,
  refusalWords,
  refusedInput,
  sizeWords,
  valueProblem,
  type FieldSpec,
} from '../../../functions/core/form-text';

const spec = (extra: Partial<FieldSpec>): FieldSpec => ({
  id: 'photo',
  label: 'Photo',
  value_type: 'asset',
  media_types: null,
  max_bytes: null,
  ...extra,
});

describe('sizes, one convention (decimal, as phones show files)', () => {
  it.each([
    [0, 'nearest', '0 bytes'],
    [1, 'nearest', '1 byte'],
    [999, 'nearest', '999 bytes'],
    [1000, 'nearest', '1 KB'],
    [1500, 'nearest', '1.5 KB'],
    [8_000_000, 'nearest', '8 MB'],
    [10_485_760, 'nearest', '10.5 MB'],
    [10_485_760, 'down', '10.4 MB'],
    [10_485_761, 'up', '10.5 MB'],
    [123_456_789, 'nearest', '123 MB'],
    [4_194_304, 'down', '4.1 MB'],
    [2_500_000_000, 'nearest', '2.5 GB'],
  ] as const)('%d bytes (%s) is %s', (bytes, rounding, words) => {
    expect(sizeWords(bytes, rounding)).toBe(words);
  });

  it('never mixes units or binary prefixes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5e12 }), (n) => /^\d+(\.\d)? (bytes?|KB|MB|GB)$/.test(sizeWords(n)) && !/i/.test(sizeWords(n))),
    );
  });

  it('a limit reads lower than any file that breaks it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 1e11 }), fc.integer({ min: 1, max: 1e9 }), (limit, over) => {
        const [a, b] = [sizeWords(limit, 'down'), sizeWords(limit + over, 'up')];
        const value = (s: string) => Number(s.split(' ')[0]) * ({ KB: 1e3, MB: 1e6, GB: 1e9 }[s.split(' ')[1] ?? ''] ?? 1);
        return value(a) < value(b);
      }),
    );
  });
});

describe('kinds of file in words', () => {
  it.each([
    [null, 'a file'],
    [['image/png'], 'a PNG image'],
    [['image/png', 'image/jpeg'], 'a PNG or JPEG image'],
    [['image/*'], 'an image'],
    [['image/png', 'image/*'], 'an image'],
    [['video/mp4'], 'an MP4 video'],
    [['application/pdf', 'image/png'], 'a PDF document or a PNG image'],
    [['audio/*'], 'a sound file'],
    [['application/zip'], 'a ZIP file'],
    [['application/octet-stream'], 'a file of a kind this service cannot recognise'],
  ])('%j is %s', (types, words) => {
    expect(kindWords(types)).toBe(words);
  });

  it('a file hint says kind and largest size, never a media type or a byte count', () => {
    const hint = fileHint({ media_types: ['image/png'], max_bytes: 10_485_760 });
    expect(hint).toBe('A PNG image, 10.4 MB or smaller. If you choose none, the example file is used.');
    expect(hint).not.toMatch(/image\/|bytes|MiB/);
  });
});

describe('labels and download names', () => {
  it('shows the label, else the id as words', () => {
    expect(labelOf('photo', 'Your photo')).toBe('Your photo');
    expect(labelOf('thumbnail_bytes', null)).toBe('Thumbnail bytes');
    expect(labelOf('max-size', '  ')).toBe('Max size');
  });

  it.each([
    ['image/png', 'thumbnail.png'],
    ['image/jpeg', 'thumbnail.jpg'],
    ['audio/mpeg', 'thumbnail.mp3'],
    ['video/quicktime', 'thumbnail.mov'],
    ['application/pdf', 'thumbnail.pdf'],
    ['application/octet-stream', 'thumbnail.bin'],
    ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'thumbnail.xlsx'],
    ['application/x-7z-compressed', 'thumbnail.bin'],
  ])('a %s output downloads as %s', (type, name) => {
    expect(downloadName('thumbnail', type)).toBe(name);
  });

  it("names each file of a list output by its place, from 1, and says a map's progress in words", () => {
    expect(downloadName('variants', 'image/png', 0)).toBe('variants-1.png');
    expect(downloadName('variants', 'image/jpeg', 3)).toBe('variants-4.jpg');
    expect(itemsWords('variants', 3, 8)).toBe('3 of 8 variants done');
    expect(itemsWords('styled_photos', 1, 4)).toBe('1 of 4 styled photos done');
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'names the media type %j like any unknown one (no prototype member)',
    (t) => {
      expect(extensionOf(t)).toMatch(/^[a-z0-9]{1,8}$/);
      expect(typeof formatName(t)).toBe('string');
    },
  );

  it('an extension is always short and safe', () => {
    fc.assert(fc.property(fc.string(), (t) => /^[a-z0-9]{1,8}$/.test(extensionOf(t))));
  });
});

describe('problems, before sending and from the service', () => {
  it('checks typed values the way the service does', () => {
    const copies = spec({ id: 'copies', label: 'Copies', value_type: 'integer' });
    expect(valueProblem(copies, '3')).toBeNull();
    expect(valueProblem(copies, '')).toBe('Enter a whole number for Copies');
    expect(valueProblem(copies, '2.5')).toBe('Copies must be a whole number, like 3');
    expect(valueProblem(copies, '9007199254740993')).toBe('Copies must be a whole number, like 3');
    const ratio = spec({ label: 'Ratio', value_type: 'float' });
    expect(valueProblem(ratio, '-0.5')).toBeNull();
    expect(valueProblem(ratio, 'half')).toBe('Ratio must be a number, like 2.5');
    const page = spec({ label: 'Page', value_type: 'reference' });
    expect(valueProblem(page, 'https://example.com/x')).toBeNull();
    expect(valueProblem(page, 'example.com')).toBe('Page must be a web address starting with https://, like https://example.com/page');
    expect(valueProblem(spec({ value_type: 'string' }), '')).toBeNull();
  });

  it('checks a chosen file by kind and size, at its edge', () => {
    const photo = spec({ media_types: ['image/png'], max_bytes: 1000 });
    expect(fileProblem(photo, { name: 'a.png', type: 'image/png', size: 1000 })).toBeNull();
    expect(fileProblem(photo, { name: 'a.png', type: 'image/png', size: 1001 })).toBe('Photo must be 1 KB or smaller; a.png is 1.1 KB');
    expect(fileProblem(photo, { name: 'a.gif', type: 'image/gif', size: 10 })).toBe('Photo must be a PNG image; a.gif is a GIF image');
    // A browser that cannot tell the kind leaves it to the service, which sniffs the bytes.
    expect(fileProblem(photo, { name: 'a', type: '', size: 10 })).toBeNull();
  });

  it('finds the input a refusal names, in both forms the execute route words it', () => {
    expect(refusedInput("input 'copies' must be a whole number (its type is integer)")).toEqual({
      id: 'copies',
      reason: 'must be a whole number (its type is integer)',
    });
    expect(refusedInput('workflow_input.copies.value must be a number')).toEqual({ id: 'copies', reason: 'must be a number' });
    expect(refusedInput('callback must be a URL when it is given')).toBeNull();
    expect(refusedInput(undefined)).toBeNull();
  });

  it('says a refusal in the words of the page', () => {
    const photo = spec({ media_types: ['image/png'], max_bytes: 10_485_760 });
    expect(refusalWords(photo, 'is application/octet-stream (sniffed from its bytes) but accepts image/png')).toBe(
      'Photo must be a PNG image; the file you chose is not one',
    );
    expect(refusalWords(photo, 'is image/gif (sniffed from its bytes) but accepts image/png')).toBe(
      'Photo must be a PNG image; the file you chose is a GIF image',
    );
    expect(refusalWords(photo, 'is 20000000 bytes but accepts image/png, at most 10485760 bytes')).toBe(
      'Photo must be 10.4 MB or smaller; the file you chose is 20 MB',
    );
    const copies = spec({ label: 'Copies', value_type: 'integer' });
    expect(refusalWords(copies, 'must be a whole number (its type is integer)')).toBe('Copies must be a whole number, like 3');
  });
});

describe("the page reads the service's own refusals (the messages as the execute parser and asset checks write them)", () => {
  const contract: Contract = {
    inputs: [
      { id: 'copies', value_type: 'integer', value: 1, visible: true },
      { id: 'ratio', value_type: 'float', value: 0.5, visible: true },
      { id: 'page', value_type: 'reference', value: 'https://example.com/a', visible: true },
      {
        id: 'photo',
        value_type: 'asset',
        value: 'data:image/png;base64,iVBORw0KGgo=',
        visible: true,
        media_types: ['image/png'],
        max_bytes: 10,
      },
    ],
    outputs: [{ id: 'out', visible: true }],
  };
  const refusal = (input: Record<string, unknown>): unknown => {
    const body = JSON.stringify({ workflow_input: input });
    const e = thrown(
      () =>
        parseExecutionRequest({ body, contentType: 'application/json' }, contract, {
          maxBodyBytes: 4096,
          maxInputs: 8,
          allowPrivateUrls: false,
        }),
      AppError,
    );
    return e.body().detail;
  };
  const specs: Record<string, FieldSpec> = {
    copies: spec({ id: 'copies', label: 'Copies', value_type: 'integer' }),
    ratio: spec({ id: 'ratio', label: 'Ratio', value_type: 'float' }),
    page: spec({ id: 'page', label: 'Page', value_type: 'reference' }),
    photo: spec({ media_types: ['image/png'], max_bytes: 10 }),
  };
  const said = (detail: unknown) => {
    const named = refusedInput(detail);
    const field = named === null ? undefined : specs[named.id];
    return named === null || field === undefined ? null : refusalWords(field, named.reason);
  };

  it.each([
    [{ copies: { value: 2.5, value_type: 'RAW' } }, 'Copies must be a whole number, like 3'],
    [{ ratio: { value: 'half', value_type: 'RAW' } }, 'Ratio must be a number, like 2.5'],
    [
      { page: { value: 'nope', value_type: 'REFERENCE' } },
      'Page must be a web address starting with https://, like https://example.com/page',
    ],
    [
      { page: { value: 'http://127.0.0.1/x', value_type: 'REFERENCE' } },
      expect.stringMatching(/^Page cannot be used: this service does not fetch that address/),
    ],
    [
      { photo: { value: `data:image/png;base64,${Buffer.alloc(11).toString('base64')}`, value_type: 'ASSET' } },
      'Photo must be 10 bytes or smaller; the file you chose is 11 bytes',
    ],
  ])('%j is said as %s', (input, words) => {
    expect(said(refusal(input))).toEqual(words);
  });

  it('a sniffing refusal, as the asset check words it', () => {
    const reason = assetRestrictionProblem({ media_types: ['image/png'] }, { media_type: 'application/octet-stream', bytes: 3 });
    expect(said(`input 'photo' ${reason}`)).toBe('Photo must be a PNG image; the file you chose is not one');
  });
});

describe("a wait's answer, in the page's words", () => {
  it('takes a JSON object typed in its one box, and says how to write one otherwise', () => {
    expect(jsonAnswer('{"approved": true}')).toEqual({ ok: true, value: { approved: true } });
    for (const bad of ['', 'yes', '[1]', 'null', '{"a":']) {
      expect(jsonAnswer(bad)).toEqual({ ok: false, problem: 'Enter your answer as a JSON object, like {"approved": true}' });
    }
  });

  it('says what came of sending it, by the answer of the resume URL', () => {
    expect(answerWords(202)).toBe('Sent. The run carries on…');
    expect(answerWords(409)).toBe('This was already answered: the run carries on with the first answer.');
    expect(answerWords(410)).toBe('It is too late to answer: the wait is over.');
    expect(answerWords(404)).toBe('This answer can no longer be sent.');
    expect(answerWords(413)).toBe('Your answer is too long to send.');
    expect(answerWords(503)).toBe('Your answer could not be sent (the service answered 503). Try again.');
    expect(waitingWords('Approve it')).toBe('Waiting for your answer: Approve it');
    expect(deadlineWords('not a date')).toBe('');
    expect(deadlineWords('2026-11-30T10:00:00.000Z')).toMatch(/^Answer before .+\.$/);
  });
});
