#!/usr/bin/env node
// A callback receiver to watch pipegate's callbacks arrive: it prints each POST it gets (the
// execution, its status, the outputs) and, given the deployment's signing secret, checks its
// Standard Webhooks signature. Node.js built-ins only, so `node` runs it as it is; in a real
// service use the `standardwebhooks` package (README, "Callbacks").
//
//   node examples/servers/callback-receiver.mjs                            # http://127.0.0.1:4014
//   PIPEGATE_SIGNING_SECRET=whsec_… node examples/servers/callback-receiver.mjs
//
// POST <any path> → 204, printed; a signature that does not match → 401 (with the secret set)
// GET /received → {"callbacks": [{"path", "webhook_id", "status", "signature", "body"}]}
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const MAX_BODY_BYTES = 1024 * 1024;
/** Standard Webhooks' tolerance for a timestamp's age, either way. */
const TOLERANCE_S = 5 * 60;
const SECRET = process.env.PIPEGATE_SIGNING_SECRET ?? '';
const received = [];

/** 'valid', 'invalid' or 'not checked' (no secret set). */
function checkSignature(headers, body) {
  if (SECRET === '') return 'not checked';
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return 'invalid';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) return 'invalid';
  const key = Buffer.from(SECRET.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  // One signature per signing secret during a rotation: any one of them will do.
  const ok = signatures.split(' ').some((s) => {
    const [version, sig] = s.split(',');
    const given = Buffer.from(sig ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
  return ok ? 'valid' : 'invalid';
}

function summary(body) {
  try {
    const parsed = JSON.parse(body);
    const outputs = Object.entries(parsed)
      .filter(([k]) => k !== 'execution_id')
      .map(([k, v]) => `${k}=${JSON.stringify(v).slice(0, 120)}`);
    return `execution ${parsed.execution_id}${outputs.length > 0 ? `: ${outputs.join(' ')}` : ''}`;
  } catch {
    return `${body.length} bytes, not JSON`;
  }
}

const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 4014);
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/received') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ callbacks: received }));
  }
  if (req.method !== 'POST') {
    res.writeHead(404, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ error: 'POST a callback to any path; GET /received lists them' }));
  }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY_BYTES) req.destroy();
    else chunks.push(c);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const signature = checkSignature(req.headers, body);
    const status = req.headers['x-pipegate-status'] ?? null;
    received.push({ path: req.url, webhook_id: req.headers['webhook-id'] ?? null, status, signature, body });
    console.log(`callback ${status ?? ''} ${summary(body)} (signature ${signature})`);
    res.writeHead(signature === 'invalid' ? 401 : 204);
    res.end();
  });
});
server.listen(port, host, () => console.log(`callback receiver listening on http://${host}:${server.address().port}`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
