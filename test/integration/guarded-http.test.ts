import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { createGuardedHttp, guardedLookup, type LookupFn } from '../../functions/adapters/guarded-http';

interface Receiver {
  server: http.Server;
  port: number;
  base: string;
  seen: string[];
  connections: number;
  /** Resolves with the path of the next request the receiver gets. */
  nextRequest(): Promise<string>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const seen: string[] = [];
  const waiters: ((path: string) => void)[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '';
    seen.push(path);
    waiters.splice(0).forEach((w) => w(path));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const route = path.split('?')[0];
      switch (route) {
        case '/json':
          res.setHeader('content-type', 'application/json');
          res.setHeader('set-cookie', ['a=1', 'b=2']);
          res.setHeader('X-Multi', ['one', 'two']);
          res.end(JSON.stringify({ ok: true, text: 'héllo' }));
          return;
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
          return;
        case '/fail':
          res.statusCode = 500;
          res.end('{"error":"boom"}');
          return;
        case '/redirect':
          res.statusCode = 302;
          res.setHeader('location', '/json');
          res.end();
          return;
        case '/hang':
          return;
        case '/drip': {
          res.writeHead(200, { 'content-type': 'text/plain' });
          const timer = setInterval(() => res.write('.'), 20);
          timers.add(timer);
          res.on('close', () => {
            clearInterval(timer);
            timers.delete(timer);
          });
          return;
        }
        case '/big-chunked':
          res.writeHead(200, { 'content-type': 'text/plain' });
          for (let i = 0; i < 64; i += 1) {
            res.write(Buffer.alloc(16 * 1024, 'x'));
          }
          res.end();
          return;
        case '/big-declared':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(2 * 1024 * 1024) });
          res.end(Buffer.alloc(2 * 1024 * 1024, 'x'));
          return;
        default:
          res.statusCode = 404;
          res.end();
      }
    });
  });
  const receiver: Receiver = {
    server,
    port: 0,
    base: '',
    seen,
    connections: 0,
    nextRequest: () => new Promise<string>((resolve) => waiters.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        timers.forEach((t) => clearInterval(t));
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => {
    receiver.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.base = `http://127.0.0.1:${receiver.port}`;
  return receiver;
}

/** A resolver answering from a fixed table, standing in for DNS. */
function fakeResolver(table: Record<string, string[]>): LookupFn {
  return (hostname, _options, callback) => {
    setImmediate(() => {
      const answers = table[hostname];
      if (answers === undefined) {
        const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        err.code = 'ENOTFOUND';
        callback(err, []);
        return;
      }
      callback(
        null,
        answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    });
  };
}

describe('guarded HTTP adapter', () => {
  let receiver: Receiver;

  beforeEach(async () => {
    receiver = await startReceiver();
  });

  afterEach(async () => {
    await receiver.close();
  });

  describe('with private addresses allowed (local runtime)', () => {
    const send = createGuardedHttp({ allowPrivate: true, userAgent: 'pipegate-test/1' });

    it('returns a 200 JSON response with lower-cased headers, repeated values joined', async () => {
      // Act
      const res = await send({ method: 'GET', url: `${receiver.base}/json`, headers: {}, timeoutMs: 60_000 });

      // Assess
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ ok: true, text: 'héllo' });
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers['set-cookie']).toBe('a=1, b=2');
      expect(res.headers['x-multi']).toBe('one, two');
    });

    it('sends method, headers, body and the configured user agent', async () => {
      // Act
      const res = await send({
        method: 'POST',
        url: `${receiver.base}/echo`,
        headers: { 'Content-Type': 'application/json', 'X-Pipegate-Status': 'completed' },
        body: '{"execution_id":"e1"}',
        timeoutMs: 60_000,
      });

      // Assess
      const echoed = JSON.parse(res.body) as { method: string; headers: Record<string, string>; body: string };
      expect(echoed.method).toBe('POST');
      expect(echoed.body).toBe('{"execution_id":"e1"}');
      expect(echoed.headers['content-type']).toBe('application/json');
      expect(echoed.headers['x-pipegate-status']).toBe('completed');
      expect(echoed.headers['user-agent']).toBe('pipegate-test/1');
    });

    it('keeps a user agent the request sets itself', async () => {
      // Act
      const res = await send({
        method: 'GET',
        url: `${receiver.base}/echo`,
        headers: { 'User-Agent': 'custom/2' },
        timeoutMs: 60_000,
      });

      // Assess
      const echoed = JSON.parse(res.body) as { headers: Record<string, string> };
      expect(echoed.headers['user-agent']).toBe('custom/2');
    });

    it('returns a 500 as a response rather than throwing', async () => {
      // Act
      const res = await send({ method: 'POST', url: `${receiver.base}/fail`, headers: {}, body: '{}', timeoutMs: 60_000 });

      // Assess
      expect(res.status).toBe(500);
      expect(res.body).toBe('{"error":"boom"}');
    });

    it('does not follow a redirect', async () => {
      // Act
      const res = await send({ method: 'GET', url: `${receiver.base}/redirect`, headers: {}, timeoutMs: 60_000 });

      // Assess
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/json');
      expect(receiver.seen).toEqual(['/redirect']);
    });

    it('times out on a receiver that never answers, without echoing the query string', async () => {
      // Act
      const call = send({ method: 'GET', url: `${receiver.base}/hang?token=s3cret`, headers: {}, timeoutMs: 300 });

      // Assess
      await expect(call).rejects.toThrow(new Error('timed out after 300 ms'));
      expect(receiver.seen).toEqual(['/hang?token=s3cret']);
    });

    it('times out on a body that keeps dripping past the deadline', async () => {
      // Act
      const call = send({ method: 'GET', url: `${receiver.base}/drip`, headers: {}, timeoutMs: 300 });

      // Assess
      await expect(call).rejects.toThrow(new Error('timed out after 300 ms'));
    });

    it('fails on a streamed body past the size limit', async () => {
      // Act
      const call = send({
        method: 'GET',
        url: `${receiver.base}/big-chunked`,
        headers: {},
        timeoutMs: 60_000,
        maxResponseBytes: 64 * 1024,
      });

      // Assess
      await expect(call).rejects.toThrow(new Error('response larger than 65536 bytes'));
    });

    it('fails on a declared body past the default 1 MiB limit', async () => {
      // Act
      const call = send({ method: 'GET', url: `${receiver.base}/big-declared`, headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('response larger than 1048576 bytes'));
    });

    it('aborts when the signal fires', async () => {
      // Prepare
      const controller = new AbortController();
      const call = send({
        method: 'GET',
        url: `${receiver.base}/hang`,
        headers: {},
        timeoutMs: 60_000,
        signal: controller.signal,
      });
      await receiver.nextRequest();

      // Act
      controller.abort();

      // Assess
      await expect(call).rejects.toThrow(new Error('aborted'));
    });

    it('does not connect when the signal has already fired', async () => {
      // Prepare
      const controller = new AbortController();
      controller.abort();

      // Act
      const call = send({ method: 'GET', url: `${receiver.base}/json`, headers: {}, timeoutMs: 60_000, signal: controller.signal });

      // Assess
      await expect(call).rejects.toThrow(new Error('aborted'));
      expect(receiver.connections).toBe(0);
    });

    it('reports a refused connection by host and port only', async () => {
      // Prepare
      const closed = await startReceiver();
      const port = closed.port;
      await closed.close();

      // Act
      const call = send({ method: 'GET', url: `http://127.0.0.1:${port}/hook?token=s3cret`, headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error(`connection refused by 127.0.0.1:${port}`));
    });

    it('reports an unknown host', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: true, resolve: fakeResolver({}) });

      // Act
      const call = guarded({ method: 'GET', url: 'http://nowhere.test/hook', headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('host nowhere.test not found'));
    });

    it('reports an invalid header instead of throwing synchronously', async () => {
      // Act
      const call = send({ method: 'GET', url: `${receiver.base}/json`, headers: { 'x-bad': 'a\r\nb' }, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('invalid character in a request header'));
      expect(receiver.connections).toBe(0);
    });

    it('connects to a name the resolver maps to loopback', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: true, resolve: fakeResolver({ 'rebind.test': ['127.0.0.1'] }) });

      // Act
      const res = await guarded({ method: 'GET', url: `http://rebind.test:${receiver.port}/json`, headers: {}, timeoutMs: 60_000 });

      // Assess
      expect(res.status).toBe(200);
      expect(receiver.seen).toEqual(['/json']);
    });
  });

  describe('cloud metadata addresses', () => {
    it.each([['169.254.169.254'], ['fd00:ec2::254']])(
      'refuses a name that resolves to %s even when private addresses are allowed',
      async (address) => {
        // Prepare
        const guarded = createGuardedHttp({ allowPrivate: true, resolve: fakeResolver({ 'metadata.test': [address] }) });

        // Act
        const call = guarded({ method: 'GET', url: 'http://metadata.test/latest/meta-data/', headers: {}, timeoutMs: 60_000 });

        // Assess
        await expect(call).rejects.toThrow(`address ${address} of host metadata.test is not allowed`);
      },
    );
  });

  describe('with private addresses refused (AWS)', () => {
    it('refuses a name that resolves to loopback, before any request reaches it', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: false, resolve: fakeResolver({ 'rebind.test': ['127.0.0.1'] }) });

      // Act
      const call = guarded({ method: 'POST', url: `http://rebind.test:${receiver.port}/json`, headers: {}, body: '{}', timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('address 127.0.0.1 of host rebind.test is not allowed'));
      expect(receiver.seen).toEqual([]);
      expect(receiver.connections).toBe(0);
    });

    it('refuses a name with one public and one internal answer', async () => {
      // Prepare
      const guarded = createGuardedHttp({
        allowPrivate: false,
        resolve: fakeResolver({ 'mixed.test': ['93.184.216.34', '169.254.169.254'] }),
      });

      // Act
      const call = guarded({ method: 'GET', url: 'http://mixed.test/', headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('address 169.254.169.254 of host mixed.test is not allowed'));
    });

    it('refuses a loopback literal before connecting', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: false });

      // Act
      const call = guarded({ method: 'GET', url: `${receiver.base}/json?token=s3cret`, headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('address 127.0.0.1 is not allowed'));
      expect(receiver.connections).toBe(0);
    });

    it('refuses an odd spelling of loopback before connecting', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: false });

      // Act
      const call = guarded({ method: 'GET', url: `http://2130706433:${receiver.port}/json`, headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(call).rejects.toThrow(new Error('address 127.0.0.1 is not allowed'));
      expect(receiver.connections).toBe(0);
    });

    it('refuses localhost by name and other schemes', async () => {
      // Prepare
      const guarded = createGuardedHttp({ allowPrivate: false });

      // Act
      const byName = guarded({ method: 'GET', url: `http://localhost:${receiver.port}/`, headers: {}, timeoutMs: 60_000 });
      const byScheme = guarded({ method: 'GET', url: 'file:///etc/passwd', headers: {}, timeoutMs: 60_000 });

      // Assess
      await expect(byName).rejects.toThrow(new Error('host localhost is not allowed'));
      await expect(byScheme).rejects.toThrow(new Error('only http and https URLs are allowed'));
      expect(receiver.connections).toBe(0);
    });
  });
});

describe('guardedLookup', () => {
  function lookupAll(
    lookup: ReturnType<typeof guardedLookup>,
    host: string,
    all: boolean,
  ): Promise<{ address: string | LookupAddress[]; family?: number }> {
    return new Promise((resolve, reject) => {
      lookup(host, { all }, (err, address, family) => (err ? reject(err) : resolve({ address, family })));
    });
  }

  const resolver = fakeResolver({
    'public.test': ['93.184.216.34', '2606:4700::1111'],
    'meta.test': ['fd00:ec2::254'],
    'ula.test': ['fd00::1'],
  });

  it('hands back the first address when Node asks for one', async () => {
    // Act
    const result = await lookupAll(guardedLookup(false, resolver), 'public.test', false);

    // Assess
    expect(result).toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('hands back every address when Node asks for all', async () => {
    // Act
    const result = await lookupAll(guardedLookup(false, resolver), 'public.test', true);

    // Assess
    expect(result.address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it('fails on a blocked IPv6 answer', async () => {
    // Act
    const result = lookupAll(guardedLookup(false, resolver), 'meta.test', true);

    // Assess
    await expect(result).rejects.toThrow('address fd00:ec2::254 of host meta.test is not allowed');
  });

  it('lets a private answer through when private addresses are allowed', async () => {
    // Act
    const result = await lookupAll(guardedLookup(true, resolver), 'ula.test', false);

    // Assess
    expect(result).toEqual({ address: 'fd00::1', family: 6 });
  });

  it('refuses the metadata answer even when private addresses are allowed', async () => {
    // Act
    const result = lookupAll(guardedLookup(true, resolver), 'meta.test', false);

    // Assess
    await expect(result).rejects.toThrow('address fd00:ec2::254 of host meta.test is not allowed');
  });
});
