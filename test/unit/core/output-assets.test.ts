/**
 * ASSET outputs as callers see them: which http answers are files, the media type a binary
 * answer is stored as, response_data and the callback payload with links, hidden outputs
 * never shown.
 */
import fc from 'fast-check';
import { servedAsAttachment } from '../../../functions/core/asset-links';
import { isMediaType } from '../../../functions/core/assets';
import { buildCallbackPayload } from '../../../functions/core/callback';
import { answerMediaType, isBinaryMediaType } from '../../../functions/core/output-assets';
import type { ObjectRef } from '../../../functions/core/ports';
import type { Execution } from '../../../functions/core/types';
import { ownerOutputAssets, responseData, resultBody } from '../../../functions/core/views';
import type { Deps } from '../../../functions/adapters/deps';
import { callerOutputIds, outputLinks } from '../../../functions/services/output-links';

describe('isBinaryMediaType', () => {
  it.each([
    'image/png',
    'image/jpeg; charset=binary',
    'IMAGE/WEBP',
    'image/svg+xml',
    'video/mp4',
    'audio/mpeg',
    'application/octet-stream',
    'application/pdf',
    'application/zip',
    'font/woff2',
  ])('%s is a file', (t) => expect(isBinaryMediaType(t)).toBe(true));
  it.each([
    undefined,
    '',
    'application/json',
    'application/json; charset=utf-8',
    'application/problem+json',
    'text/plain',
    'text/html',
    'text/csv',
    'application/xml',
    'application/atom+xml',
    'application/javascript',
    'not a type',
    'multipart/form-data',
  ])('%s stays a value', (t) => expect(isBinaryMediaType(t)).toBe(false));
});

describe('answerMediaType', () => {
  it('takes what the bytes sniff as, whatever the upstream says', () => {
    expect(answerMediaType('image/png', 'image/jpeg')).toBe('image/png');
  });
  it('keeps a declared type a browser is only ever given as an attachment (SVG), lowercased and without parameters', () => {
    expect(answerMediaType('application/octet-stream', 'Image/SVG+XML; charset=utf-8')).toBe('image/svg+xml');
  });
  it('never lets an unproven declaration claim a type served inline', () => {
    expect(answerMediaType('application/octet-stream', 'image/png')).toBe('application/octet-stream');
    expect(answerMediaType('application/octet-stream', undefined)).toBe('application/octet-stream');
  });
});

describe('Content-Type handling (property)', () => {
  it('never throws, and never stores an unproven type a browser would show inline', () => {
    const contentType = fc.oneof(
      fc.string(),
      fc.constantFrom('image/png', 'IMAGE/SVG+XML;x=1', 'text/html', 'application/pdf ; q=1', ''),
      fc.constant(undefined),
    );
    fc.assert(
      fc.property(contentType, fc.constantFrom('image/png', 'application/octet-stream'), (declared, sniffed) => {
        expect(typeof isBinaryMediaType(declared)).toBe('boolean');
        const stored = answerMediaType(sniffed, declared);
        if (sniffed === 'image/png') expect(stored).toBe('image/png');
        else expect(stored === 'application/octet-stream' || (isMediaType(stored) && servedAsAttachment(stored))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

const ref = (name: string): ObjectRef => ({ key: `d/dep/e/exec/${name}`, media_type: 'image/png', bytes: 42, sha256: 'ab'.repeat(32) });
const link = (name: string) => ({ url: `https://api.test/v1/assets/${name}`, expires_at: '2026-11-25T00:00:00.000Z' });

function execution(over: Partial<Execution> = {}): Execution {
  return {
    execution_id: '00000000-0000-4000-8000-000000000001',
    kind: 'api',
    pipeline_id: 'p',
    version: 1,
    deployment_id: '00000000-0000-4000-8000-000000000002',
    status: 'completed',
    inputs: {},
    outputs: { caption: 'a cat' },
    output_assets: { image: ref('image'), secret_image: ref('secret_image') },
    visible_outputs: ['caption', 'image'],
    callback: 'https://receiver.test/',
    callback_delivery: null,
    error_message: null,
    created_at: '2026-11-24T00:00:00.000Z',
    started_at: '2026-11-24T00:00:00.000Z',
    completed_at: '2026-11-24T00:00:01.000Z',
    expires_at: null,
    ...over,
  };
}

describe('response_data and the callback', () => {
  it('shows a visible ASSET output as its link with media type, size and expiry', () => {
    expect(responseData(execution(), { image: link('image') })).toEqual({
      caption: { value: 'a cat', value_type: 'RAW' },
      image: {
        value: 'https://api.test/v1/assets/image',
        value_type: 'ASSET',
        media_type: 'image/png',
        bytes: 42,
        expires_at: '2026-11-25T00:00:00.000Z',
      },
    });
  });

  it('never shows a hidden ASSET output, even when a link is at hand', () => {
    const data = responseData(execution(), { image: link('image'), secret_image: link('secret_image') });
    expect(Object.keys(data).sort()).toEqual(['caption', 'image']);
    expect(JSON.stringify(resultBody(execution(), { secret_image: link('secret_image') }))).not.toContain('secret_image');
  });

  it('sends an ASSET output in the callback as a list holding its link, and no hidden one', () => {
    const payload = buildCallbackPayload(execution(), { image: link('image'), secret_image: link('secret_image') });
    expect(payload).toEqual({
      caption: ['a cat'],
      image: ['https://api.test/v1/assets/image'],
      execution_id: '00000000-0000-4000-8000-000000000001',
    });
  });

  it('shows the owner every ASSET output, hidden ones too', () => {
    expect(Object.keys(ownerOutputAssets(execution(), { image: link('image'), secret_image: link('secret_image') }) ?? {})).toEqual([
      'image',
      'secret_image',
    ]);
    expect(ownerOutputAssets(execution({ status: 'failed' }))).toBeNull();
  });
});

describe('outputLinks', () => {
  // Only what outputLinks uses of Deps: the clock and the link minter.
  function deps() {
    const minted: string[] = [];
    const d = {
      clock: { now: () => new Date('2026-11-24T00:00:00Z') },
      assetLinks: {
        link: async (r: ObjectRef, base: string) => (minted.push(r.key), { url: `${base}/v1/assets/${r.key}`, expires_at: 'x' }),
      },
    } as unknown as Deps;
    return { d, minted };
  }

  it("mints a link for each of the caller's visible ASSET outputs only", async () => {
    const { d, minted } = deps();
    const links = await outputLinks(d, execution(), 'https://api.test', callerOutputIds(execution()));
    expect(Object.keys(links)).toEqual(['image']);
    expect(minted).toEqual(['d/dep/e/exec/image']);
  });

  it('mints every one for the owner, and none before completion', async () => {
    const { d, minted } = deps();
    expect(Object.keys(await outputLinks(d, execution(), 'https://api.test', null))).toEqual(['image', 'secret_image']);
    expect(await outputLinks(d, execution({ status: 'failed' }), 'https://api.test', null)).toEqual({});
    expect(minted).toHaveLength(2);
  });
});
