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
import { serveJsonApi } from './json-api.mjs';

const ORIGIN = 'DE';
const EU = new Set([
  'AT',
  'BE',
  'BG',
  'CY',
  'CZ',
  'DK',
  'EE',
  'ES',
  'FI',
  'FR',
  'GR',
  'HR',
  'HU',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PL',
  'PT',
  'RO',
  'SE',
  'SI',
  'SK',
]);
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

serveJsonApi({
  name: 'shipping rates API',
  path: '/quote',
  usage: 'POST /quote with {"weight_kg", "destination", "express"}',
  defaultPort: 4010,
  handle: (body) => {
    const answer = quote(body);
    return { status: 'error' in answer ? 422 : 200, body: answer };
  },
});
