import fc from 'fast-check';
import { INLINE_ASSET_BODY_MAX_BYTES, parseAssetValue, UPLOADS_ROUTE } from '../../../functions/core/assets';
import { bodyLimitDetail, inlineLimitDetail } from '../../../functions/core/body-size';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import type { Contract } from '../../../functions/core/types';
import { dataUri, png } from '../../support/media';
import { thrown } from '../../support/thrown';

const DEFAULT_PNG = dataUri('image/png', png(1, 1));
const contract: Contract = {
  inputs: [
    { id: 'photo', value_type: 'asset', value: DEFAULT_PNG, visible: true, media_types: ['image/png', 'image/jpeg'], max_bytes: 1000 },
    { id: 'any', value_type: 'asset', value: DEFAULT_PNG, visible: true },
    { id: 'caption', value_type: 'string', value: 'hi', visible: true },
  ],
  outputs: [{ id: 'thumb', visible: true }],
};
const opts = { maxBodyBytes: 1024, maxInputs: 8, allowPrivateUrls: false };
const parse = (body: unknown, o = opts) =>
  parseExecutionRequest({ body: typeof body === 'string' ? body : JSON.stringify(body), contentType: 'application/json' }, contract, o);
const appError = (fn: () => unknown): AppError => thrown(fn, AppError);
const asset = (value: string) => ({ value, value_type: 'ASSET' });

describe('parseExecutionRequest: ASSET values', () => {
  it('takes base64 and data URIs as inline bytes, and an upload value as an upload', () => {
    // Prepare
    const bytes = png(3, 3);

    // Act
    const a = parse({ workflow_input: { photo: asset(bytes.toString('base64')) } });
    const b = parse({ workflow_input: { photo: asset(dataUri('text/plain', bytes)) } });
    const c = parse({ workflow_input: { any: asset('upload:0b8e6f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b') } });

    // Assess
    expect(a.assets.photo).toEqual({ kind: 'inline', bytes: new Uint8Array(bytes) });
    expect(b.assets.photo).toEqual({ kind: 'inline', bytes: new Uint8Array(bytes) });
    expect(c.assets.any).toEqual({ kind: 'upload', uploadId: '0b8e6f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b' });
    expect(a.inputs).toEqual({ caption: 'hi' });
  });

  it('gives asset inputs that are not sent their published data URI', () => {
    const r = parse({});
    expect(r.assets.photo).toEqual({ kind: 'inline', bytes: new Uint8Array(png(1, 1)) });
    expect(r.assets.any).toEqual(r.assets.photo);
  });

  it.each([
    ['malformed base64', 'not*base64', /input 'photo' is not valid base64/],
    ['base64 with whitespace', 'aGVs bG8=', /not valid base64/],
    ['a data URI without ;base64', 'data:image/png,abc', /without ;base64/],
    ['an empty value', '', /is empty/],
    ['an upload value that names nothing', 'upload:../../etc', /names no upload/],
  ])('answers 422 naming the input for %s', (_name, value, detail) => {
    const e = appError(() => parse({ workflow_input: { photo: asset(value) } }));
    expect(e.status).toBe(422);
    expect(e.code).toBe('InvalidInput');
    expect(String(e.detail)).toMatch(detail);
  });

  it('refuses inline bytes over the input max_bytes at once, naming what it accepts', () => {
    const e = appError(() =>
      parse({ workflow_input: { photo: asset(Buffer.alloc(1001, 1).toString('base64')) } }, { ...opts, maxBodyBytes: 4096 }),
    );
    expect(e.status).toBe(422);
    expect(e.detail).toBe("input 'photo' is 1001 bytes but accepts image/png or image/jpeg, at most 1000 bytes");
    // At the edge: exactly max_bytes passes the size check.
    expect(
      parse({ workflow_input: { photo: asset(Buffer.alloc(1000, 1).toString('base64')) } }, { ...opts, maxBodyBytes: 4096 }).assets.photo,
    ).toBeDefined();
  });

  it('answers 422 for ASSET sent to a string input and RAW sent to an asset input', () => {
    expect(appError(() => parse({ workflow_input: { caption: asset('aGk=') } })).detail).toBe(
      "input 'caption' takes value_type RAW (its type is string), got ASSET",
    );
    expect(appError(() => parse({ workflow_input: { photo: { value: 'aGk=', value_type: 'RAW' } } })).detail).toBe(
      "input 'photo' takes value_type ASSET (its type is asset), got RAW",
    );
  });

  it('lets inline ASSET values past the usual body limit, up to the inline limit', () => {
    // Prepare: 1.5 MB of base64 with a body limit of 1 KiB.
    const big = Buffer.alloc(1_500_000, 1).toString('base64');

    // Act
    const r = parse({ workflow_input: { any: asset(big) } });

    // Assess
    expect(r.assets.any?.kind).toBe('inline');
  });

  it('still counts everything but ASSET values against the usual limit', () => {
    const e = appError(() =>
      parse({
        workflow_input: { any: asset(Buffer.alloc(3000).toString('base64')), caption: { value: 'x'.repeat(2000), value_type: 'RAW' } },
      }),
    );
    expect(e.status).toBe(413);
    expect(e.detail).toBe(bodyLimitDetail(1024));
  });

  it('answers 413 naming the inline limit and the upload route past the inline limit, at its edge', () => {
    // Prepare: a body of exactly the limit, and one byte more.
    const skeleton = JSON.stringify({ workflow_input: { any: asset('') } });
    const fill = INLINE_ASSET_BODY_MAX_BYTES - skeleton.length;
    const atLimit = JSON.stringify({ workflow_input: { any: asset('A'.repeat(fill - (fill % 4))) } }).padEnd(
      INLINE_ASSET_BODY_MAX_BYTES,
      ' ',
    );
    const over = `${atLimit} `;

    // Act
    const ok = parse(atLimit);
    const e = appError(() => parse(over));

    // Assess
    expect(Buffer.byteLength(atLimit)).toBe(INLINE_ASSET_BODY_MAX_BYTES);
    expect(ok.assets.any?.kind).toBe('inline');
    expect(e.status).toBe(413);
    expect(e.detail).toBe(inlineLimitDetail());
    expect(String(e.detail)).toContain('4194304 bytes (4 MiB)');
    expect(String(e.detail)).toContain(UPLOADS_ROUTE);
  });

  it('keeps the usual 413 for an oversize body that is not JSON', () => {
    expect(appError(() => parse('x'.repeat(2000))).detail).toBe(bodyLimitDetail(1024));
  });
});

describe('parseAssetValue (fuzzed)', () => {
  it('decodes whatever bytes were encoded, as base64 and as a data URI', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        fc.constantFrom('image/png', 'application/octet-stream', ''),
        (bytes, type) => {
          const b64 = Buffer.from(bytes).toString('base64');
          for (const value of [b64, `data:${type};base64,${b64}`, b64.replace(/=+$/, '')]) {
            const r = parseAssetValue(value);
            expect(r.ok && r.form.kind === 'inline' && Buffer.from(r.form.bytes).equals(Buffer.from(bytes))).toBe(true);
          }
        },
      ),
    );
  });

  it('never throws, and the request parser answers only catalog errors, whatever the value', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.base64String(),
          fc.string().map((s) => `data:${s}`),
          fc.string().map((s) => `upload:${s}`),
        ),
        (value) => {
          const r = parseAssetValue(value);
          expect(typeof r.ok).toBe('boolean');
          try {
            parse({ workflow_input: { any: asset(value) } });
          } catch (e) {
            expect(e).toBeInstanceOf(AppError);
            expect([413, 422]).toContain((e as AppError).status);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses any value holding a character outside base64 (past a data URI prefix)', () => {
    fc.assert(
      fc.property(fc.base64String({ minLength: 4 }), fc.constantFrom('*', ' ', '\n', '-', '_', '%', '.'), fc.nat(), (b64, bad, at) => {
        const i = at % (b64.length + 1);
        const r = parseAssetValue(b64.slice(0, i) + bad + b64.slice(i));
        expect(r.ok).toBe(false);
      }),
    );
  });
});
