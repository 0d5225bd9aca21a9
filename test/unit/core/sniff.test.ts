import { sniffMediaType, UNKNOWN_MEDIA_TYPE } from '../../../functions/core/sniff';
import { jpeg, mp4, png, svg } from '../../support/media';

describe('sniffMediaType', () => {
  it.each([
    ['a PNG', png(), 'image/png'],
    ['a JPEG', jpeg(), 'image/jpeg'],
    ['an MP4', mp4(), 'video/mp4'],
    ['plain text', Buffer.from('hello, world'), UNKNOWN_MEDIA_TYPE],
    ['no bytes', Buffer.alloc(0), UNKNOWN_MEDIA_TYPE],
  ])('names %s by its bytes', async (_name, bytes, expected) => {
    // Act
    const type = await sniffMediaType(bytes);

    // Assess
    expect(type).toBe(expected);
  });

  it('does not take an SVG for an image it could vouch for', async () => {
    // SVG is text: file-type does not sniff it, so it is octet-stream and never image/svg+xml.
    expect(await sniffMediaType(svg())).toBe(UNKNOWN_MEDIA_TYPE);
  });

  it('reads a PNG header followed by garbage as a PNG, and a truncated one without failing', async () => {
    expect(await sniffMediaType(Buffer.concat([png(), Buffer.alloc(10_000, 7)]))).toBe('image/png');
    expect(typeof (await sniffMediaType(png().subarray(0, 12)))).toBe('string');
  });
});
