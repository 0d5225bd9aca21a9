import { DEFINITION_ASSET_MAX_BYTES } from '../../../functions/core/assets';
import { validateDefinition } from '../../../functions/core/pipeline';
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

  it('refuses media_types and max_bytes on inputs that are not assets', () => {
    expect(problems(withInput({ value_type: 'string', value: 'x', media_types: ['image/png'], max_bytes: 5 }))).toEqual([
      { path: 'nodes.photo.media_types', reason: 'applies only to asset inputs (value_type asset)' },
      { path: 'nodes.photo.max_bytes', reason: 'applies only to asset inputs (value_type asset)' },
    ]);
  });
});
