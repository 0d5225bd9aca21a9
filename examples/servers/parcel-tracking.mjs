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
import { timingSafeEqual } from 'node:crypto';
import { serveJsonApi } from './json-api.mjs';

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

serveJsonApi({
  name: 'parcel tracking API',
  path: '/track',
  usage: 'POST /track with {"number", "notify_url"}',
  defaultPort: 4011,
  refuse: (req) => {
    const auth = req.headers.authorization ?? '';
    return sameToken(auth) ? undefined : { status: 401, body: { error: `unauthorized: "${auth}" is not a valid token` } };
  },
  handle: (body) => {
    const parcel = PARCELS[body?.number];
    if (!parcel) return { status: 404, body: { error: `no parcel ${JSON.stringify(body?.number)}` } };
    return { status: 200, body: { number: body.number, ...parcel, notify_url: body.notify_url ?? null } };
  },
});
