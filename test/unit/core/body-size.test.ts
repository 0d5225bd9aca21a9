/**
 * The body-size rule (functions/core/body-size.ts) at its edges, for the usual limit and the
 * inline-asset limit, and fuzzed against a model written from the contract's sentence: every
 * byte counts against the usual limit but a route's inline ASSET values, which may take the
 * room up to the inline limit.
 */
import fc from 'fast-check';
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOADS_ROUTE } from '../../../functions/core/assets';
import {
  assertBodySize,
  beyondEveryLimitDetail,
  bodyCeiling,
  bodyLimitDetail,
  bodySizeProblem,
  inlineLimitDetail,
  type BodyLimits,
} from '../../../functions/core/body-size';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import type { Contract } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';

const MAX = 262_144;
const usual: BodyLimits = { maxBodyBytes: MAX };
const inline: BodyLimits = { maxBodyBytes: MAX, inlineAssets: true };
const GENERAL = 'the request body must be at most 262144 bytes (256 KiB)';

describe('the body-size rule at its edges', () => {
  it('takes a body of exactly the usual limit and refuses one byte more, naming the limit', () => {
    expect(bodySizeProblem(MAX, usual)).toBeNull();
    expect(bodySizeProblem(MAX + 1, usual)).toBe(GENERAL);
    // An ASSET value gets no room on a route that does not take inline assets.
    expect(bodySizeProblem(MAX + 1, usual, MAX)).toBe(GENERAL);
  });

  it('takes a body of exactly the inline limit on an inline route and refuses one byte more, naming it and the uploads route', () => {
    // Prepare: everything past the usual limit is ASSET values.
    const atLimit = INLINE_ASSET_BODY_MAX_BYTES;
    const assets = INLINE_ASSET_BODY_MAX_BYTES - MAX;

    // Act
    const ok = bodySizeProblem(atLimit, inline, assets);
    const over = bodySizeProblem(atLimit + 1, inline, assets + 1);
    const overUnparsed = bodySizeProblem(atLimit + 1, inline);

    // Assess
    expect(ok).toBeNull();
    expect(over).toBe(inlineLimitDetail());
    expect(overUnparsed).toBe(inlineLimitDetail());
    expect(over).toBe(
      `the request body must be at most 4194304 bytes (4 MiB) when it carries inline ASSET values; send larger files with ${UPLOADS_ROUTE} and put the asset it answers in workflow_input`,
    );
  });

  it('lets ASSET values take the room past the usual limit, byte for byte, and nothing else', () => {
    // Prepare: a body 1000 bytes over the usual limit.
    const size = MAX + 1000;

    // Act / Assess: 1000 bytes of ASSET values make it fit; 999 leave one byte over.
    expect(bodySizeProblem(size, inline, 1000)).toBeNull();
    expect(bodySizeProblem(size, inline, 999)).toBe(GENERAL);
    // A body that is not JSON has no ASSET values.
    expect(bodySizeProblem(size, inline, 0)).toBe(GENERAL);
    // Not parsed yet: only the ceiling is decided.
    expect(bodySizeProblem(size, inline)).toBeNull();
  });

  it('names the usual limit past the ceiling when it is configured above the inline limit', () => {
    const large: BodyLimits = { maxBodyBytes: 8 * 1_048_576, inlineAssets: true };
    expect(bodyCeiling(large)).toBe(8 * 1_048_576);
    expect(bodySizeProblem(8 * 1_048_576 + 1, large)).toBe(bodyLimitDetail(8 * 1_048_576));
  });

  it('throws PayloadTooLarge with the detail', () => {
    const e = thrown(() => assertBodySize(MAX + 1, usual), AppError);
    expect([e.code, e.status, e.detail]).toEqual(['PayloadTooLarge', 413, GENERAL]);
    expect(() => assertBodySize(MAX, usual)).not.toThrow();
  });

  it('gives the web ACL both answers, the usual one first', () => {
    expect(beyondEveryLimitDetail(MAX)).toBe(`${GENERAL}; ${inlineLimitDetail()}`);
    // Configured above the inline limit, both kinds of route say the same: once.
    expect(beyondEveryLimitDetail(8 * 1_048_576)).toBe(bodyLimitDetail(8 * 1_048_576));
  });
});

/**
 * The model: the route's largest limit holds the whole body; the usual limit holds the body
 * less what the route lets ASSET values take (nothing counted before the body is parsed).
 */
function model(size: number, limits: BodyLimits, assetBytes: number | undefined): string | null {
  const largest = limits.inlineAssets ? Math.max(limits.maxBodyBytes, INLINE_ASSET_BODY_MAX_BYTES) : limits.maxBodyBytes;
  if (size > largest) return largest === limits.maxBodyBytes ? bodyLimitDetail(limits.maxBodyBytes) : inlineLimitDetail();
  const counted = assetBytes === undefined ? 0 : size - (limits.inlineAssets ? assetBytes : 0);
  return counted > limits.maxBodyBytes ? bodyLimitDetail(limits.maxBodyBytes) : null;
}

describe('the body-size rule (fuzzed)', () => {
  // The configured range (lib/config.ts PIPEGATE_MAX_BODY_BYTES) and sizes near every edge.
  const limits = fc.record({
    maxBodyBytes: fc.oneof(fc.constant(MAX), fc.integer({ min: 1024, max: 10_000_000 })),
    inlineAssets: fc.boolean(),
  });
  const near = (edge: number) => fc.integer({ min: -3, max: 3 }).map((d) => Math.max(0, edge + d));

  it('answers as the model does', () => {
    fc.assert(
      fc.property(
        limits,
        fc.nat(),
        fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
        fc.nat({ max: 3 }),
        (l, seed, share, which) => {
          const edges = [l.maxBodyBytes, INLINE_ASSET_BODY_MAX_BYTES, bodyCeiling(l), seed % (2 * INLINE_ASSET_BODY_MAX_BYTES)];
          const size = Math.max(0, (edges[which] ?? 0) + ((seed % 7) - 3));
          const assetBytes = share === undefined ? undefined : Math.floor(size * share);
          expect(bodySizeProblem(size, l, assetBytes)).toBe(model(size, l, assetBytes));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('puts the model near each edge with ASSET values filling the room to the byte', () => {
    fc.assert(
      fc.property(limits, fc.integer({ min: 0, max: 1 }), fc.integer({ min: -2, max: 2 }), (l, which, d) => {
        const size = which === 0 ? bodyCeiling(l) + d : l.maxBodyBytes + 100 + d;
        const assetBytes = size - l.maxBodyBytes;
        expect(bodySizeProblem(size, l, assetBytes)).toBe(model(size, l, assetBytes));
      }),
    );
    fc.assert(fc.property(limits, near(MAX), (l, size) => expect(bodySizeProblem(size, l)).toBe(model(size, l, undefined))));
  });
});

describe('the execute parser follows the rule: only ASSET values take the extra room', () => {
  const contract: Contract = {
    inputs: [
      { id: 'file', value_type: 'asset', value: 'data:text/plain;base64,aGk=', visible: true },
      { id: 'note', value_type: 'string', value: 'hi', visible: true },
    ],
    outputs: [],
  };
  const opts = { maxBodyBytes: 1024, maxInputs: 8, allowPrivateUrls: false };
  const parse = (body: string) => parseExecutionRequest({ body, contentType: 'application/json' }, contract, opts);
  const problem = (body: string): string | null => {
    try {
      parse(body);
      return null;
    } catch (e) {
      if (e instanceof AppError && e.code === 'PayloadTooLarge') return String(e.detail);
      return null;
    }
  };
  // base64 of 3n bytes is 4n characters of A: no padding, so any multiple of 4 is valid.
  const body = (assetChars: number, noteChars: number) =>
    JSON.stringify({
      workflow_input: {
        file: { value: 'A'.repeat(assetChars), value_type: 'ASSET' },
        note: { value: 'n'.repeat(noteChars), value_type: 'RAW' },
      },
    });

  it('takes a body whose other bytes are exactly the usual limit, and refuses one byte more of a RAW value', () => {
    // Prepare: the skeleton and the note fill the usual limit; the asset is 2000 more.
    const skeleton = Buffer.byteLength(body(0, 0));
    const atLimit = body(2000, 1024 - skeleton);
    const over = body(2000, 1025 - skeleton);

    // Act / Assess
    expect(Buffer.byteLength(atLimit) - 2000).toBe(1024);
    expect(problem(atLimit)).toBeNull();
    expect(problem(over)).toBe(bodyLimitDetail(1024));
  });

  it('agrees with the model for any sizes of ASSET and RAW values', () => {
    fc.assert(
      fc.property(fc.nat({ max: 800 }), fc.nat({ max: 1200 }), (quads, noteChars) => {
        const text = body(quads * 4, noteChars);
        expect(problem(text)).toBe(model(Buffer.byteLength(text), { maxBodyBytes: 1024, inlineAssets: true }, quads * 4));
      }),
      { numRuns: 300 },
    );
  });
});
