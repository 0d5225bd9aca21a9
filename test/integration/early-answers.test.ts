/**
 * Answers given before a body is read reach the client, not a reset: the local gateway's 413 to
 * a body past its route's ceiling, and the S3 emulation's 403 to a presigned PUT longer than its
 * signed length. Each is sent 20 times with curl's and Node's default clients (fetch and
 * http.request, no `Expect: 100-continue`) and with a client that sends its whole body before it
 * reads; before the server read the rest of such a body, a 5 MB body got a connection reset
 * instead of the answer (7 times in 10 in a fuzz of the running service, every time with the
 * last client).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import { createGateway, type ProxyHandler } from '../../lib/local/gateway';
import { startLocalS3, type LocalS3 } from '../../lib/local/s3';
import { ROUTES, routeHandlers } from '../../lib/routes';

const TRIES = 20;
const OVER = 5_000_000;

interface Answer {
  status: number;
  body: string;
}

/** curl as a user runs it: `--data-binary @file`, its defaults otherwise. */
function curl(url: string, method: string, file: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const args = ['-sS', '-X', method, '--data-binary', `@${file}`, '-w', '\n%{http_code}', url];
    for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
    const child = spawn('curl', args);
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', () => {
      const at = out.lastIndexOf('\n');
      resolve({ status: Number(out.slice(at + 1)), body: out.slice(0, at) + err });
    });
  });
}

async function viaFetch(url: string, method: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  try {
    const res = await fetch(url, { method, body, headers });
    return { status: res.status, body: await res.text() };
  } catch (e) {
    return { status: 0, body: String((e as { cause?: unknown }).cause ?? e) };
  }
}

/** http.request with its defaults; settled once the answer is read and the request is done writing. */
function viaHttp(url: string, method: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve) => {
    let answer: Answer | undefined;
    let closed = false;
    const settle = () => {
      if (answer && closed) resolve(answer);
    };
    const req = request(url, { method, headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        answer ??= { status: res.statusCode ?? 0, body: text };
        settle();
      });
      res.on('error', (e) => {
        answer ??= { status: 0, body: String(e) };
        settle();
      });
    });
    req.on('error', (e) => {
      answer ??= { status: 0, body: String(e) };
      settle();
    });
    req.on('close', () => {
      closed = true;
      answer ??= { status: 0, body: 'closed without an answer' };
      settle();
    });
    req.end(body);
  });
}

/**
 * A client that sends its whole request before it reads a byte of the answer (as Python's
 * http.client and the clients built on it do): an answer that arrived meanwhile waits in its
 * socket's buffer, which a reset from the server empties. What the other clients meet only when
 * their event loop is slow to read, this one meets every time.
 */
function writeThenRead(url: string, method: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const socket = connect(Number(u.port), u.hostname);
    let text = '';
    let done = false;
    const finish = (a: Answer) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(a);
    };
    socket.on('error', (e) => finish({ status: 0, body: String(e) }));
    socket.pause();
    const head = [`${method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, `Content-Length: ${body.length}`, 'Connection: close'];
    for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
    socket.write(body, () => {
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('end', () => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
        finish({ status, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
      });
      socket.resume();
    });
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'pipegate-early-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the local gateway's 413 to a body past the ceiling", () => {
  let server: Server;
  let url: string;
  const body = Buffer.alloc(OVER, 0x61);
  const headers = { 'Content-Type': 'application/json', 'X-API-Key': 'k' };

  beforeAll(async () => {
    const handlers: Record<string, ProxyHandler> = {};
    for (const name of routeHandlers()) handlers[name] = async () => ({ statusCode: 200, body: '{}' });
    server = createServer(
      createGateway({
        routes: ROUTES,
        handlers,
        authorizer: async () => {
          throw new Error('Unauthorized');
        },
        ownerToken: 'pgo_x',
        maxBodyBytes: 256 * 1024,
      }),
    );
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/deployments/d-1/executions`;
    writeFileSync(join(dir, 'big.json'), body);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });

  const expect413 = (answers: Answer[]) => {
    expect(OVER).toBeGreaterThan(INLINE_ASSET_BODY_MAX_BYTES);
    expect(answers.map((a) => a.status)).toEqual(Array(TRIES).fill(413));
    for (const a of answers) expect(JSON.parse(a.body)).toMatchObject({ error: 'Payload Too Large' });
  };

  it('reaches curl 20 times in 20', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await curl(url, 'POST', join(dir, 'big.json'), headers));
    expect413(answers);
  });

  it("reaches Node's fetch 20 times in 20", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await viaFetch(url, 'POST', body, headers));
    expect413(answers);
  });

  it("reaches Node's http.request 20 times in 20", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await viaHttp(url, 'POST', body, headers));
    expect413(answers);
  });

  it('reaches a client that sends the whole body before it reads, 20 times in 20', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await writeThenRead(url, 'POST', body, headers));
    expect413(answers);
  });
});

describe("the S3 emulation's 403 to a presigned PUT longer than its signed length", () => {
  let s3: LocalS3;
  const creds = { accessKeyId: 'AKLOCALTEST', secretAccessKey: 'local-test-secret' };
  const signed = 1_000;
  const body = Buffer.alloc(OVER, 0x62);

  beforeAll(async () => {
    s3 = await startLocalS3({ dir: join(dir, 's3'), buckets: ['b'], region: 'local', secretOf: () => creds.secretAccessKey });
    writeFileSync(join(dir, 'big.bin'), body);
  });
  afterAll(() => s3.stop());

  const presigned = async (i: number) => {
    const store = createObjectStore({ region: 'local', s3Endpoint: s3.url, s3ForcePathStyle: true }, 'b', creds);
    return (await store.presignUpload(`d/x/u/${i}`, 'image/jpeg', signed, 900)).url;
  };
  const expect403 = (answers: Answer[]) => {
    expect(answers.map((a) => a.status)).toEqual(Array(TRIES).fill(403));
    for (const a of answers) expect(a.body).toContain('<Code>SignatureDoesNotMatch</Code>');
  };

  it('reaches curl 20 times in 20', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++)
      answers.push(await curl(await presigned(i), 'PUT', join(dir, 'big.bin'), { 'Content-Type': 'image/jpeg' }));
    expect403(answers);
  });

  it("reaches Node's fetch and http.request 20 times in 20 each", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await viaFetch(await presigned(i), 'PUT', body, { 'Content-Type': 'image/jpeg' }));
    for (let i = 0; i < TRIES; i++) answers.push(await viaHttp(await presigned(i), 'PUT', body, { 'Content-Type': 'image/jpeg' }));
    expect(answers).toHaveLength(2 * TRIES);
    expect403(answers.slice(0, TRIES));
    expect403(answers.slice(TRIES));
  });

  it('reaches a client that sends the whole body before it reads, 20 times in 20', async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < TRIES; i++) answers.push(await writeThenRead(await presigned(i), 'PUT', body, { 'Content-Type': 'image/jpeg' }));
    expect403(answers);
  });
});
