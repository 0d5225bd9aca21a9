import { DEFINITION_ASSET_MAX_BYTES } from '../../../functions/core/assets';
import { SVG_MEDIA_TYPE, SVG_REFUSAL } from '../../../functions/core/definition-schema';
import { validateDefinition } from '../../../functions/core/pipeline';
import { sniffMediaType } from '../../../functions/core/sniff';
import { dataUri, png } from '../../support/media';

const withInput = (input: Record<string, unknown>) => ({
  nodes: { photo: { type: 'input', ...input }, out: { type: 'output', from: 'photo' } },
});
const problems = (def: unknown) => {
  const r = validateDefinition(def);
  return r.ok ? [] : r.problems;
};

describe('validateDefinition: asset inputs', () => {
  it('takes an asset input with a data URI, media_types and max_bytes', () => {
    // Act
    const r = validateDefinition(
      withInput({ value_type: 'asset', value: dataUri('image/png', png()), media_types: ['image/png', 'image/*'], max_bytes: 1_000_000 }),
    );

    // Assess
    expect(r.ok).toBe(true);
    expect(r.ok && r.definition.nodes.photo).toMatchObject({ media_types: ['image/png', 'image/*'], max_bytes: 1_000_000 });
  });

  it.each([
    ['plain base64', Buffer.from('hi').toString('base64'), 'must be a base64 data URI'],
    ['a URL', 'https://example.com/cat.png', 'must be a base64 data URI'],
    [
      'a data URI over the definition limit',
      dataUri('image/png', Buffer.alloc(DEFINITION_ASSET_MAX_BYTES + 1)),
      `of at most ${DEFINITION_ASSET_MAX_BYTES} bytes decoded`,
    ],
    ['a number', 5, 'must be a base64 data URI'],
  ])('refuses %s as an asset value', (_name, value, reason) => {
    expect(problems(withInput({ value_type: 'asset', value }))).toEqual([
      { path: 'nodes.photo.value', reason: expect.stringContaining(reason) },
    ]);
  });

  it('takes a data URI of exactly the definition limit', () => {
    expect(
      problems(withInput({ value_type: 'asset', value: dataUri('application/octet-stream', Buffer.alloc(DEFINITION_ASSET_MAX_BYTES)) })),
    ).toEqual([]);
  });

  it.each([
    [{ media_types: [] }, 'nodes.photo.media_types', 'must list at least one media type (leave it out to accept any)'],
    [
      { media_types: ['image/PNG'] },
      'nodes.photo.media_types[0]',
      'must be a lowercase media type such as image/png, or a whole type such as image/*',
    ],
    [
      { media_types: ['png'] },
      'nodes.photo.media_types[0]',
      'must be a lowercase media type such as image/png, or a whole type such as image/*',
    ],
    [{ media_types: ['image/png', 'image/png'] }, 'nodes.photo.media_types', 'must not list a media type twice'],
    [{ max_bytes: 0 }, 'nodes.photo.max_bytes', 'must be at least 1 bytes'],
    [{ max_bytes: 1.5 }, 'nodes.photo.max_bytes', 'must be a whole number'],
  ])('refuses restrictions %j', (extra, path, reason) => {
    expect(problems(withInput({ value_type: 'asset', value: dataUri('image/png', png()), ...extra }))).toEqual([{ path, reason }]);
  });

  it('refuses image/svg+xml, saying why (no SVG could ever pass the sniffing), and takes the types beside it', () => {
    // Act
    const alone = problems(withInput({ value_type: 'asset', value: dataUri('image/png', png()), media_types: ['image/svg+xml'] }));
    const among = problems(
      withInput({ value_type: 'asset', value: dataUri('image/png', png()), media_types: ['image/png', 'image/svg+xml', 'image/*'] }),
    );

    // Assess
    expect(alone).toEqual([{ path: 'nodes.photo.media_types[0]', reason: SVG_REFUSAL }]);
    expect(among).toEqual([{ path: 'nodes.photo.media_types[1]', reason: SVG_REFUSAL }]);
    expect(SVG_REFUSAL).toMatch(/XML.*no SVG would ever pass.*script/);
    // Its neighbours on the edge: a whole image type, and other XML-based types, stay accepted.
    for (const ok of [['image/*'], ['application/xml'], ['image/svg']])
      expect(problems(withInput({ value_type: 'asset', value: dataUri('image/png', png()), media_types: ok }))).toEqual([]);
  });

  it('an SVG is sniffed as XML, so an input listing image/svg+xml could never take one', async () => {
    const svg = Buffer.from(
      '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><script>alert(1)</script></svg>',
    );
    expect(await sniffMediaType(svg)).not.toBe(SVG_MEDIA_TYPE);
  });

  it('refuses media_types and max_bytes on inputs that are not assets', () => {
    expect(problems(withInput({ value_type: 'string', value: 'x', media_types: ['image/png'], max_bytes: 5 }))).toEqual([
      { path: 'nodes.photo.media_types', reason: 'applies only to asset inputs (value_type asset)' },
      { path: 'nodes.photo.max_bytes', reason: 'applies only to asset inputs (value_type asset)' },
    ]);
  });
});
