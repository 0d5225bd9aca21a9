#!/usr/bin/env node
// A small image service for the thumbnail example: it takes a PNG as the raw request body and
// answers a smaller PNG. Node.js built-ins only (zlib for PNG's compression), so `node` runs it
// as it is; a real service would use an image library (sharp, for instance) and take JPEG too.
//
//   node examples/servers/thumbnail.mjs           # http://127.0.0.1:4012
//   PORT=4020 node examples/servers/thumbnail.mjs
//
// POST /thumbnail?size=64 (body: PNG bytes, 8-bit grey, grey+alpha, RGB or RGBA, not interlaced)
//   → 200 image/png, scaled down (nearest neighbour) to fit size×size, never up
//   → 415 {"error": …} for anything else; 413 past 10 MiB
import { createServer } from 'node:http';
import { deflateSync, inflateSync } from 'node:zlib';

const MAX_BODY_BYTES = 10 * 1024 * 1024;
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** {width, height, rgba} of a PNG this service reads, or a reason it cannot. */
function decodePng(bytes) {
  if (bytes.length < 8 || !bytes.subarray(0, 8).equals(SIGNATURE)) return { error: 'the body is not a PNG' };
  let at = 8;
  let header = null;
  const data = [];
  while (at + 8 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR')
      header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], color: body[9], interlace: body[12] };
    else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  if (header === null) return { error: 'the PNG has no header' };
  const channels = CHANNELS[header.color];
  if (header.depth !== 8 || channels === undefined || header.interlace !== 0)
    return { error: 'only 8-bit, non-interlaced grey, RGB and RGBA PNGs are taken' };
  const { width, height } = header;
  let raw;
  try {
    raw = inflateSync(Buffer.concat(data));
  } catch {
    return { error: 'the PNG image data is corrupt' };
  }
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) return { error: 'the PNG image data is short' };
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
      const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      if (predictor === undefined) return { error: 'the PNG uses an unknown filter' };
      pixels[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  const rgba = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    const s = pixels.subarray(i * channels, (i + 1) * channels);
    const [r, g, b, alpha] =
      channels === 1
        ? [s[0], s[0], s[0], 255]
        : channels === 2
          ? [s[0], s[0], s[0], s[1]]
          : channels === 3
            ? [s[0], s[1], s[2], 255]
            : [s[0], s[1], s[2], s[3]];
    rgba.set([r, g, b, alpha], i * 4);
  }
  return { width, height, rgba };
}

function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** An RGBA PNG of the pixels. */
function encodePng(width, height, rgba) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 6;
  const rows = Buffer.alloc(height * (width * 4 + 1));
  for (let y = 0; y < height; y++) rgba.copy(rows, y * (width * 4 + 1) + 1, y * width * 4, (y + 1) * width * 4);
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

/** The image scaled down (nearest neighbour) to fit size×size, keeping its proportions. */
function thumbnail(image, size) {
  const scale = Math.min(1, size / image.width, size / image.height);
  const width = Math.max(1, Math.round(image.width * scale));
  const height = Math.max(1, Math.round(image.height * scale));
  const out = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const sx = Math.min(image.width - 1, Math.floor(x / scale));
      const sy = Math.min(image.height - 1, Math.floor(y / scale));
      image.rgba.copy(out, (y * width + x) * 4, (sy * image.width + sx) * 4, (sy * image.width + sx) * 4 + 4);
    }
  }
  return { width, height, rgba: out };
}

function refuse(res, status, error) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error }));
}

const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 4012);
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (req.method !== 'POST' || url.pathname !== '/thumbnail') return refuse(res, 404, 'POST /thumbnail?size=N with a PNG body');
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      refuse(res, 413, `the body is larger than ${MAX_BODY_BYTES} bytes`);
      req.destroy();
    } else chunks.push(c);
  });
  req.on('end', () => {
    const image = decodePng(Buffer.concat(chunks));
    if (image.error) {
      console.log(`POST ${req.url} ${size} bytes → 415 ${image.error}`);
      return refuse(res, 415, image.error);
    }
    const wanted = Math.min(1024, Math.max(1, Number(url.searchParams.get('size') ?? 64) || 64));
    const small = thumbnail(image, wanted);
    const png = encodePng(small.width, small.height, small.rgba);
    console.log(`POST ${req.url} ${image.width}×${image.height} → 200 ${small.width}×${small.height}`);
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(png.length) });
    res.end(png);
  });
});
server.listen(port, host, () => console.log(`thumbnail listening on http://${host}:${server.address().port}`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
