/** The checks behind API Gateway's "Malformed Lambda proxy response" (a 502). */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import type { Reply } from './replies';
import { isPlainObject } from '../../../functions/core/values';

const RESULT_KEYS = new Set(['statusCode', 'headers', 'multiValueHeaders', 'body', 'isBase64Encoded']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

type HeaderValue = string | number | boolean;
const isHeaderValue = (x: unknown): x is HeaderValue => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean';

export function checkProxyResult(result: unknown): { ok: true; reply: Reply } | { ok: false; reason: string } {
  if (!isPlainObject(result)) return { ok: false, reason: 'not an object' };
  const extra = Object.keys(result).filter((k) => !RESULT_KEYS.has(k));
  if (extra.length > 0) return { ok: false, reason: `unexpected field(s) ${extra.join(', ')}` };
  const { statusCode, headers, multiValueHeaders, body, isBase64Encoded } = result;
  if (typeof statusCode !== 'number' || !Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
    return { ok: false, reason: 'statusCode must be an integer from 100 to 599' };
  }
  if (body !== undefined && typeof body !== 'string') return { ok: false, reason: 'body must be a string' };
  if (isBase64Encoded !== undefined && typeof isBase64Encoded !== 'boolean')
    return { ok: false, reason: 'isBase64Encoded must be a boolean' };

  const single: Array<[string, string]> = [];
  if (headers !== undefined) {
    if (!isPlainObject(headers)) return { ok: false, reason: 'headers must be an object' };
    for (const [name, value] of Object.entries(headers)) {
      if (!isHeaderValue(value)) return { ok: false, reason: `header ${name} must be a string, number or boolean` };
      single.push([name, String(value)]);
    }
  }
  const multi: Array<[string, string]> = [];
  if (multiValueHeaders !== undefined) {
    if (!isPlainObject(multiValueHeaders)) return { ok: false, reason: 'multiValueHeaders must be an object' };
    for (const [name, values] of Object.entries(multiValueHeaders)) {
      if (!Array.isArray(values) || !values.every(isHeaderValue))
        return { ok: false, reason: `multiValueHeaders ${name} must be a list of strings` };
      for (const value of values) multi.push([name, String(value)]);
    }
  }
  // Where both name a header, multiValueHeaders wins, as on API Gateway.
  const multiNames = new Set(multi.map(([n]) => n.toLowerCase()));
  const all = [...single.filter(([n]) => !multiNames.has(n.toLowerCase())), ...multi];
  for (const [name, value] of all) {
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      return { ok: false, reason: `header ${JSON.stringify(name)} is not a valid HTTP header` };
    }
  }

  const text = body ?? '';
  if (isBase64Encoded === true && !BASE64.test(text)) return { ok: false, reason: 'body is not base64' };
  return {
    ok: true,
    reply: { status: statusCode, headers: all, body: isBase64Encoded === true ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8') },
  };
}
