/**
 * Tiny but valid media files, built in code so that tests carry real bytes without binary
 * fixtures: a PNG (zlib-compressed RGBA scanlines, CRC'd chunks), a baseline JPEG (a 1×1 grey
 * image from a well-known minimal encoding), an MP4 (ftyp + an empty moov/mdat, enough for any
 * sniffer and for players to recognise the container), and an SVG (text a browser would run).
 */
import { createHash, randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import type { PipelineDefinition } from '../../functions/core/types';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A width×height RGBA PNG; each pixel from `pixel(x, y)` (default: a gradient). */
export function png(
  width = 2,
  height = 2,
  pixel: (x: number, y: number) => [number, number, number, number] = (x, y) => [x * 40, y * 40, 128, 255],
): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 4);
    for (let x = 0; x < width; x++) Buffer.from(pixel(x, y)).copy(row, 1 + x * 4);
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A width×height PNG of random opaque pixels: they barely compress (about 3.4 bytes a pixel). */
export function noisyPng(width: number, height: number): Buffer {
  const noise = randomBytes(width * height * 3);
  return png(width, height, (x, y) => {
    const at = (y * width + x) * 3;
    return [noise[at] ?? 0, noise[at + 1] ?? 0, noise[at + 2] ?? 0, 255];
  });
}

/** A 1×1 baseline JPEG (JFIF). */
export function jpeg(): Buffer {
  return Buffer.from(
    'ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080001000101011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00fbd3ffd9',
    'hex',
  );
}

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'ascii');
  return Buffer.concat([head, body]);
}

/** An MP4 container (isom/mp42 brands) with a movie header and an empty media data box. */
export function mp4(): Buffer {
  const ftyp = box('ftyp', Buffer.from('isom', 'ascii'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2mp41', 'ascii'));
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(1000, 12); // timescale
  mvhd.writeUInt32BE(0x00010000, 20); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24); // volume 1.0
  mvhd.writeUInt32BE(2, 96); // next track id
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('mdat', Buffer.alloc(16))]);
}

export const svg = (): Buffer => Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', 'utf8');

export const dataUri = (mediaType: string, bytes: Uint8Array): string =>
  `data:${mediaType};base64,${Buffer.from(bytes).toString('base64')}`;

/** Lowercase hex SHA-256, as records and transforms see an asset's bytes. */
export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A value of `workflow_input` for an asset input. */
export const assetValue = (value: string) => ({ value, value_type: 'ASSET' });

/**
 * A transform's expression saying what the pipeline saw of asset input `id`: its sniffed type,
 * size and hash, as `image/png 1234 <sha256>`.
 */
export const assetFactsExpression = (id: string): string => `${id}.media_type & ' ' & $string(${id}.bytes) & ' ' & ${id}.sha256`;

/** A pipeline whose output `bytes` is the size of the photo it is given (any media type). */
export const photoBytesPipeline = (): PipelineDefinition => ({
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) },
    size: { type: 'transform', inputs: ['photo'], expression: 'photo.bytes' },
    bytes: { type: 'output', from: 'size' },
  },
});

/**
 * A pipeline to publish and show what it made of a photo (PNG or JPEG up to `maxBytes`):
 * output `info` is its facts (assetFactsExpression), `url` the link it was handed.
 */
export const photoInfoPipeline = (maxBytes: number): PipelineDefinition => ({
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: dataUri('image/png', png(1, 1)),
      media_types: ['image/png', 'image/jpeg'],
      max_bytes: maxBytes,
    },
    about: { type: 'transform', inputs: ['photo'], expression: assetFactsExpression('photo') },
    link: { type: 'transform', inputs: ['photo'], expression: 'photo.url' },
    info: { type: 'output', from: 'about' },
    url: { type: 'output', from: 'link' },
  },
});
