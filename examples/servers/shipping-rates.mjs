#!/usr/bin/env node
// A small shipping-rates JSON API for the shipping-quote example: run it beside `npm start`
// and the pipeline's http node calls it. Node.js built-ins only, so `node` runs it as it is.
//
//   node examples/servers/shipping-rates.mjs           # http://127.0.0.1:4010
//   PORT=4020 node examples/servers/shipping-rates.mjs
//
// POST /quote {"weight_kg": 2.5, "destination": "FR", "express": false}
//   → 200 {"carrier", "zone", "destination", "weight_kg", "express", "price": {"amount", "currency"}, "delivery_days"}
//   → 422 {"error": …} when the request is not one it can price
import { createServer } from 'node:http';

const HOST = process.env.HOST ?? '127.0.0.1';
const PORT = Number(process.env.PORT ?? 4010);

const ORIGIN = 'DE';
const EU = new Set(['AT', 'BE', 'BG', 'CY', 'CZ', 'DK', 'EE', 'ES', 'FI', 'FR', 'GR', 'HR', 'HU', 'IE', 'IT', 'LT', 'LU', 'LV', 'MT', 'NL', 'PL', 'PT', 'RO', 'SE', 'SI', 'SK']);
const ZONES = {
  domestic: { base: 4.5, perKg: 0.8, days: 2, expressDays: 1 },
  eu: { base: 9, perKg: 1.5, days: 4, expressDays: 2 },
  world: { base: 19, perKg: 4, days: 9, expressDays: 4 },
};
const EXPRESS_FACTOR = 1.8;
const MAX_WEIGHT_KG = 30;

const cents = (x) => Math.round(x * 100) / 100;

/** The quote for a request body, or the reason it cannot be priced. */
export function quote(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { error: 'the body must be a JSON object' };
  const { weight_kg: weight, destination, express = false } = body;
  if (typeof weight !== 'number' || !(weight > 0) || weight > MAX_WEIGHT_KG) {
    return { error: `weight_kg must be a number above 0 and at most ${MAX_WEIGHT_KG}` };
  }
  if (typeof destination !== 'string' || !/^[A-Z]{2}$/.test(destination)) {
    return { error: 'destination must be a two-letter country code such as FR' };
  }
  if (typeof express !== 'boolean') return { error: 'express must be true or false' };
  const zone = destination === ORIGIN ? 'domestic' : EU.has(destination) ? 'eu' : 'world';
  const rate = ZONES[zone];
  const standard = rate.base + rate.perKg * weight;
  return {
    carrier: 'pipegate parcel',
    zone,
    destination,
    weight_kg: weight,
    express,
    price: { amount: cents(express ? standard * EXPRESS_FACTOR : standard), currency: 'EUR' },
    delivery_days: express ? rate.expressDays : rate.days,
  };
}

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
    if (req.method !== 'POST' || req.url !== '/quote') {
      send(res, 404, { error: 'POST /quote with {"weight_kg", "destination", "express"}' });
      return;
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      send(res, 422, { error: 'the body must be JSON' });
      return;
    }
    const answer = quote(body);
    const status = 'error' in answer ? 422 : 200;
    console.log(`${req.method} ${req.url} ${JSON.stringify(body)} → ${status}`);
    send(res, status, answer);
  });
});

server.listen(PORT, HOST, () => {
  const { port } = server.address();
  console.log(`shipping rates API listening on http://${HOST}:${port}`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
