// What the example APIs share: one JSON route on HOST:PORT, its body read and parsed, each
// request logged with the status it got, and a clean stop on Ctrl-C or SIGTERM.
// Node.js built-ins only.
import { createServer } from 'node:http';

function send(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * Serves `POST <path>`: `handle(body)` returns `{ status, body }` for a JSON body; any other
 * method or path gets 404 with `usage`, a body that is not JSON gets 422. `refuse(req)`, when
 * given, is asked first and may answer instead (an API that checks a token).
 */
export function serveJsonApi({ name, path, usage, defaultPort, refuse, handle }) {
  const host = process.env.HOST ?? '127.0.0.1';
  const port = Number(process.env.PORT ?? defaultPort);
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== path) {
        send(res, 404, { error: usage });
        return;
      }
      const refused = refuse?.(req);
      if (refused) {
        console.log(`${req.method} ${req.url} → ${refused.status}`);
        send(res, refused.status, refused.body);
        return;
      }
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        send(res, 422, { error: 'the body must be JSON' });
        return;
      }
      const answer = handle(body);
      console.log(`${req.method} ${req.url} ${JSON.stringify(body)} → ${answer.status}`);
      send(res, answer.status, answer.body);
    });
  });

  server.listen(port, host, () => {
    console.log(`${name} listening on http://${host}:${server.address().port}`);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return server;
}
