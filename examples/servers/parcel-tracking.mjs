#!/usr/bin/env node
// A small parcel-tracking JSON API that wants a bearer token, for the parcel-status example:
// the pipeline's http node sends the token from an owner secret, never from the pipeline file.
// Node.js built-ins only, so `node` runs it as it is.
//
//   TRACKING_TOKEN=… node examples/servers/parcel-tracking.mjs        # http://127.0.0.1:4011
//   PORT=4021 TRACKING_TOKEN=… node examples/servers/parcel-tracking.mjs
//
// POST /track {"number": "PG-1001", "notify_url": "https://…"} with Authorization: Bearer <TRACKING_TOKEN>
//   → 200 {"number", "status", "location", "notify_url"}
//   → 401 when the token is missing or wrong; like some real APIs, its message repeats the
//     Authorization header it was sent (pipegate redacts it from what a run reports)
//   → 404 for a parcel it does not know, 422 for a request it cannot read
import { createServer } from 'node:http';
import { timingSafeEqual } from 'node:crypto';

const HOST = process.env.HOST ?? '127.0.0.1';
const PORT = Number(process.env.PORT ?? 4011);
const TOKEN = process.env.TRACKING_TOKEN ?? '';
if (TOKEN === '') {
  console.error('set TRACKING_TOKEN to the bearer token this API accepts, e.g. TRACKING_TOKEN=$(openssl rand -hex 16)');
  process.exit(2);
}

const PARCELS = {
  'PG-1001': { status: 'in transit', location: 'Lyon hub' },
  'PG-2002': { status: 'delivered', location: 'Berlin, front door' },
  'PG-3003': { status: 'waiting for pickup', location: 'Hamburg depot' },
};

const sameToken = (given) => {
  const a = Buffer.from(given);
  const b = Buffer.from(`Bearer ${TOKEN}`);
  return a.length === b.length && timingSafeEqual(a, b);
};

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => {
    text += chunk;
  });
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/track') {
      send(res, 404, { error: 'POST /track with {"number", "notify_url"}' });
      return;
    }
    const auth = req.headers.authorization ?? '';
    if (!sameToken(auth)) {
      console.log(`${req.method} ${req.url} → 401`);
      send(res, 401, { error: `unauthorized: "${auth}" is not a valid token` });
      return;
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      send(res, 422, { error: 'the body must be JSON' });
      return;
    }
    const parcel = PARCELS[body?.number];
    const status = parcel ? 200 : 404;
    console.log(`${req.method} ${req.url} ${JSON.stringify(body)} → ${status}`);
    if (!parcel) send(res, 404, { error: `no parcel ${JSON.stringify(body?.number)}` });
    else send(res, 200, { number: body.number, ...parcel, notify_url: body.notify_url ?? null });
  });
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  console.log(`parcel tracking API listening on http://${HOST}:${port}`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
