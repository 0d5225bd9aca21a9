import fc from 'fast-check';
import {
  assetHeaders,
  assetLinkKey,
  MAX_ASSET_TOKEN_CHARS,
  parseRange,
  servedAsAttachment,
  signAssetToken,
  verifyAssetToken,
  type AssetClaims,
} from '../../../functions/core/asset-links';

const KEY = assetLinkKey(Buffer.alloc(32, 7));
const OTHER = assetLinkKey(Buffer.alloc(32, 8));
const NOW = new Date('2026-11-24T12:00:00Z');
const LATER = Math.floor(NOW.getTime() / 1000) + 3600;
const claims = (over: Partial<AssetClaims> = {}): AssetClaims => ({
  key: 'd/6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e/e/0b6e3c1a-93a4-4c51-8f4e-7a1d2c3b4a5f/out.thumbnail',
  media_type: 'image/png',
  attachment: false,
  exp: LATER,
  ...over,
});
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.';

describe('asset link tokens', () => {
  it('round-trip what they bind: key, media type, attachment, expiry', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_./-]{1,200}$/),
        fc.constantFrom('image/png', 'image/svg+xml', 'text/plain; charset=utf-8', 'application/octet-stream'),
        fc.boolean(),
        fc.integer({ min: LATER, max: LATER + 1e8 }),
        (key, media_type, attachment, exp) => {
          const c = { key, media_type, attachment, exp };
          expect(verifyAssetToken(signAssetToken(c, KEY), KEY, NOW)).toEqual({ ok: true, claims: c });
        },
      ),
    );
  });

  it('are refused after any single-character change', () => {
    const token = signAssetToken(claims(), KEY);
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...TOKEN_ALPHABET), (at, ch) => {
        fc.pre(token[at] !== ch);
        const altered = token.slice(0, at) + ch + token.slice(at + 1);
        // Base64url's last character may carry unused bits: a change there decodes to the same
        // tag, and canonical re-encoding must refuse it all the same.
        expect(verifyAssetToken(altered, KEY, NOW)).toEqual({ ok: false, reason: 'invalid' });
      }),
    );
  });

  it('are refused when signed under another key, and a claim swapped between two tokens breaks both', () => {
    // Prepare
    const foreign = signAssetToken(claims(), OTHER);
    const [v, , sig] = signAssetToken(claims(), KEY).split('.');
    const [, payload] = signAssetToken(claims({ key: 'd/other' }), KEY).split('.');
    // Act + Assess
    expect(verifyAssetToken(foreign, KEY, NOW)).toEqual({ ok: false, reason: 'invalid' });
    expect(verifyAssetToken(`${v}.${payload}.${sig}`, KEY, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('say expired only for a genuine link, at its expiry to the second', () => {
    // Prepare
    const token = signAssetToken(claims({ exp: LATER }), KEY);
    const at = new Date(LATER * 1000);
    // Act + Assess
    expect(verifyAssetToken(token, KEY, new Date(LATER * 1000 - 1)).ok).toBe(true);
    expect(verifyAssetToken(token, KEY, at)).toEqual({ ok: false, reason: 'expired', expired_at: at.toISOString() });
    expect(verifyAssetToken(signAssetToken(claims({ exp: LATER }), OTHER), KEY, at)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('refuse anything malformed without throwing', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        expect(verifyAssetToken(s, KEY, NOW).ok).toBe(false);
      }),
    );
    expect(verifyAssetToken('v1.x'.padEnd(MAX_ASSET_TOKEN_CHARS + 1, 'a'), KEY, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('never carry a media type that could end a header', () => {
    expect(() => signAssetToken(claims({ media_type: 'text/html\r\nx: y' }), KEY)).toThrow(/media type/);
  });

  it('use a key of their own, derived from the master key', () => {
    expect(KEY.equals(Buffer.alloc(32, 7))).toBe(false);
    expect(KEY).toHaveLength(32);
    expect(assetLinkKey(Buffer.alloc(32, 7)).equals(KEY)).toBe(true);
  });
});

describe('what a browser may show inline', () => {
  it.each([
    'image/svg+xml',
    'text/html',
    'application/xhtml+xml',
    'text/xml',
    'application/xml',
    'text/javascript',
    'application/javascript',
    'application/pdf',
    'application/octet-stream',
    'image/x-unknown',
    'multipart/form-data',
    'TEXT/HTML; charset=utf-8',
  ])('%s is an attachment', (type) => expect(servedAsAttachment(type)).toBe(true));
  it.each(['image/png', 'image/jpeg', 'image/webp', 'video/mp4', 'audio/mpeg', 'text/plain; charset=utf-8', 'application/json'])(
    '%s is inline',
    (type) => expect(servedAsAttachment(type)).toBe(false),
  );
});

describe('asset answer headers', () => {
  it('carry the exact type and length, nosniff, the disposition, and a cache life within the link', () => {
    // Act
    const h = assetHeaders(
      claims({ media_type: 'image/svg+xml', attachment: true, exp: Math.floor(NOW.getTime() / 1000) + 90 }),
      1234,
      NOW,
    );
    // Assess
    expect(h).toMatchObject({
      'content-type': 'image/svg+xml',
      'content-length': '1234',
      'x-content-type-options': 'nosniff',
      'content-disposition': 'attachment; filename="out.thumbnail"',
      'cache-control': 'private, max-age=90',
      'referrer-policy': 'no-referrer',
    });
    expect(assetHeaders(claims(), 1, NOW)['cache-control']).toBe('private, max-age=3600');
  });

  it("name the file as the link says (an output's <id>.<extension>), bound by the signature; links without a name keep the key's", () => {
    // Prepare
    const named = signAssetToken(claims({ name: 'thumbnail.png' }), KEY);
    const checked = verifyAssetToken(named, KEY, NOW);

    // Assess
    expect(checked).toEqual({ ok: true, claims: claims({ name: 'thumbnail.png' }) });
    expect(checked.ok && assetHeaders(checked.claims, 1, NOW)['content-disposition']).toBe('inline; filename="thumbnail.png"');
    expect(verifyAssetToken(signAssetToken(claims(), KEY), KEY, NOW)).toEqual({ ok: true, claims: claims() });
    // A name that could break the header is never signed.
    for (const bad of ['a"b.png', 'a b.png', '.hidden', '', 'x'.repeat(129)])
      expect(() => signAssetToken(claims({ name: bad }), KEY)).toThrow();
    // Changing the name changes the payload, which the tag no longer matches.
    const [v, payload, tag] = named.split('.');
    const renamed = Buffer.from(
      JSON.stringify([...(JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as unknown[]).slice(0, 4), 'x.html']),
    ).toString('base64url');
    expect(verifyAssetToken(`${v}.${renamed}.${tag}`, KEY, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });
});

describe('Range', () => {
  it.each([
    [undefined, { kind: 'whole' }],
    ['bytes=0-9', { kind: 'range', start: 0, end: 9 }],
    ['bytes=90-', { kind: 'range', start: 90, end: 99 }],
    ['bytes=90-500', { kind: 'range', start: 90, end: 99 }],
    ['bytes=-10', { kind: 'range', start: 90, end: 99 }],
    ['bytes=-500', { kind: 'range', start: 0, end: 99 }],
    ['bytes=100-', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=5-3', { kind: 'whole' }],
    ['bytes=0-1,5-6', { kind: 'whole' }],
    ['items=0-1', { kind: 'whole' }],
  ])('%s of 100 bytes → %j', (header, expected) => {
    expect(parseRange(header, 100)).toEqual(expected);
  });
});
