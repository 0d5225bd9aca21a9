/**
 * The S3 emulation's request parsing, fuzzed: whatever arrives is read or refused with an S3
 * error (never a crash), and the SigV4 it verifies is exactly what the SDK signs.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import fc from 'fast-check';
import { createObjectStore } from '../../../functions/adapters/objects.store';
import {
  parseCompleteBody,
  parseAddress,
  parseAuthorization,
  parseDeleteBody,
  parseRange,
  S3Error,
  verifySignature,
  xmlEscape,
} from '../../../lib/local/s3-request';

const creds = { accessKeyId: 'AKTEST', secretAccessKey: 'fuzz-secret' };
const ENDPOINT = 'http://127.0.0.1:4569';
const onlyS3Errors = (f: () => unknown): void => {
  try {
    f();
  } catch (e) {
    if (!(e instanceof S3Error)) throw e;
  }
};

/** What a browser or curl sends for a presigned URL: the path and query as they are, and Host. */
function presignedRequest(url: string) {
  const u = new URL(url);
  return { target: `${u.pathname}${u.search}`, headers: { host: u.host } };
}

describe('S3 request parsing', () => {
  // A key made of `.` and `..` segments is left out: the WHATWG URL parser (and so every HTTP
  // client) resolves them away before the request is sent, so no request can name such a key;
  // pipegate's own keys (functions/core/object-keys.ts) never have one.
  const keys = fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: 60 })
    .filter((k) => !k.split('/').some((segment) => segment === '.' || segment === '..'));

  it('verifies every URL the SDK presigns, whatever the key and media type, and nothing altered', async () => {
    const store = createObjectStore({ region: 'local', s3Endpoint: ENDPOINT, s3ForcePathStyle: true }, 'bkt', creds);
    await fc.assert(
      fc.asyncProperty(keys, fc.string({ maxLength: 40 }), fc.nat({ max: 200 }), async (key, type, flip) => {
        const link = await store.presignDownload(key, type, 300, true);
        const { target, headers } = presignedRequest(link.url);
        const a = parseAddress(target);
        const auth = parseAuthorization(a, headers);

        expect(a.bucket).toBe('bkt');
        expect(a.key).toBe(key);
        expect(auth?.kind).toBe('presigned');
        verifySignature('GET', a, headers, auth!, creds.secretAccessKey, 'local', Date.now());

        // Any one character of the path or query changed (but the signature itself) is refused.
        const at = flip % target.length;
        const changed = target.slice(0, at) + (target[at] === 'a' ? 'b' : 'a') + target.slice(at + 1);
        let refused = false;
        try {
          const b = parseAddress(changed);
          const bAuth = parseAuthorization(b, headers);
          if (!bAuth) throw new S3Error(403, 'AccessDenied', 'anonymous');
          verifySignature('GET', b, headers, bAuth, creds.secretAccessKey, 'local', Date.now());
        } catch (e) {
          expect(e).toBeInstanceOf(S3Error);
          refused = true;
        }
        expect(refused || changed === target).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('verifies header-signed requests as the SDK signs them (S3: the path unescaped again, the payload hash in a header)', async () => {
    const signer = new SignatureV4({
      credentials: creds,
      region: 'local',
      service: 's3',
      sha256: Sha256,
      uriEscapePath: false,
      applyChecksum: true,
    });
    await fc.assert(
      fc.asyncProperty(
        keys,
        fc.dictionary(fc.stringMatching(/^[a-z-]{1,12}$/), fc.string({ maxLength: 20 }), { maxKeys: 4 }),
        async (key, query) => {
          const path = `/bkt/${key
            .split('/')
            .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
            .join('/')}`;
          const signed = await signer.sign({
            method: 'PUT',
            protocol: 'http:',
            hostname: '127.0.0.1',
            port: 4569,
            path,
            query,
            headers: {
              host: '127.0.0.1:4569',
              'content-type': 'image/png',
              'content-length': '3',
              'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
            },
          });
          const search = Object.entries(query)
            .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
            .join('&');
          const headers = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]));
          const a = parseAddress(search ? `${path}?${search}` : path);
          const auth = parseAuthorization(a, headers);

          expect(a.key).toBe(key);
          verifySignature('PUT', a, headers, auth!, creds.secretAccessKey, 'local', Date.now());
          expect(() =>
            verifySignature('PUT', a, { ...headers, 'content-length': '4' }, auth!, creds.secretAccessKey, 'local', Date.now()),
          ).toThrow('does not match');
        },
      ),
      { numRuns: 100 },
    );
  });

  it('reads or refuses any request target and headers with an S3 error, never anything else', () => {
    const text = fc.string({ unit: 'binary', maxLength: 120 });
    const target = fc.oneof(
      text.map((s) => `/${s}`),
      fc.tuple(text, text).map(([p, q]) => `/bkt/${encodeURI(p)}?${q}`),
      fc.constantFrom('/bkt/%', '/bkt/a?%ZZ=1', '/bkt?delete', '/', '/bkt/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=99999999'),
    );
    const auth = fc.oneof(
      text,
      fc.constant(undefined),
      fc.tuple(text, text).map(([a, b]) => `AWS4-HMAC-SHA256 Credential=${a}, SignedHeaders=${b}, Signature=${'0'.repeat(64)}`),
    );
    fc.assert(
      fc.property(target, auth, text, (t, authorization, date) => {
        onlyS3Errors(() => {
          const a = parseAddress(t);
          const parsed = parseAuthorization(a, {
            authorization,
            'x-amz-date': date,
            'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
            host: 'h',
          });
          if (parsed) verifySignature('GET', a, { host: 'h' }, parsed, 's', 'local', Date.now());
        });
      }),
      { numRuns: 2000 },
    );
  });

  it('reads a Range within the object or refuses it with InvalidRange, and ignores what it cannot read', () => {
    const header = fc.oneof(
      fc
        .tuple(fc.option(fc.nat(3000), { nil: undefined }), fc.option(fc.nat(3000), { nil: undefined }))
        .map(([a, b]) => `bytes=${a ?? ''}-${b ?? ''}`),
      fc.string({ maxLength: 30 }),
    );
    fc.assert(
      fc.property(header, fc.nat(2000), (h, size) => {
        try {
          const r = parseRange(h, size);
          if (r) {
            expect(r.start).toBeGreaterThanOrEqual(0);
            expect(r.start).toBeLessThanOrEqual(r.end);
            expect(r.end).toBeLessThan(size);
          }
        } catch (e) {
          expect(e).toMatchObject({ status: 416, code: 'InvalidRange' });
        }
      }),
      { numRuns: 2000 },
    );
    expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('bytes=95-', 100)).toEqual({ start: 95, end: 99 });
    expect(parseRange('bytes=0-1000', 100)).toEqual({ start: 0, end: 99 });
    expect(() => parseRange('bytes=100-', 100)).toThrow('not satisfiable');
    expect(parseRange('bytes=0-1,5-6', 100)).toBeNull();
  });

  it('reads back every key of a DeleteObjects body, and refuses anything else as MalformedXML', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        (ks, quiet) => {
          const xml = `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${ks
            .map((k) => `<Object><Key>${xmlEscape(k)}</Key></Object>`)
            .join('')}<Quiet>${quiet}</Quiet></Delete>`;
          expect(parseDeleteBody(xml)).toEqual({ keys: ks, quiet });
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => onlyS3Errors(() => parseDeleteBody(s))),
      { numRuns: 2000 },
    );
    expect(() => parseDeleteBody(`<Delete>${'<Object><Key>k</Key></Object>'.repeat(1001)}</Delete>`)).toThrow('not well-formed');
  });
});

describe("CompleteMultipartUpload's body", () => {
  it('reads the parts in order, ETags unescaped, whatever order their elements come in', () => {
    const xml =
      '<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ETag>&quot;aa&quot;</ETag><PartNumber>1</PartNumber></Part><Part><PartNumber>3</PartNumber><ETag>"bb"</ETag></Part></CompleteMultipartUpload>';
    expect(parseCompleteBody(xml)).toEqual([
      { partNumber: 1, etag: '"aa"' },
      { partNumber: 3, etag: '"bb"' },
    ]);
  });

  it.each([
    ['no parts', '<CompleteMultipartUpload></CompleteMultipartUpload>', 'MalformedXML'],
    ['a part without its number', '<CompleteMultipartUpload><Part><ETag>"a"</ETag></Part></CompleteMultipartUpload>', 'MalformedXML'],
    [
      'parts out of order',
      '<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>"a"</ETag></Part><Part><PartNumber>1</PartNumber><ETag>"b"</ETag></Part></CompleteMultipartUpload>',
      'InvalidPartOrder',
    ],
    ['another document', '<Delete><Object><Key>k</Key></Object></Delete>', 'MalformedXML'],
  ])('refuses %s as S3 does', (_, xml, code) => {
    expect(() => parseCompleteBody(xml)).toThrow(expect.objectContaining({ code }));
  });

  it('never throws anything but an S3Error on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        try {
          parseCompleteBody(`<CompleteMultipartUpload>${text}</CompleteMultipartUpload>`);
        } catch (e) {
          expect(e).toBeInstanceOf(S3Error);
        }
      }),
    );
  });
});
