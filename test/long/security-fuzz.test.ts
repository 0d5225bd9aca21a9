/**
 * The long security run (`npm run test:long`): thousands of fuzzed requests over every route,
 * mutated API keys, and private addresses in every spelling the URL parser accepts.
 * PIPEGATE_FUZZ_RUNS and PIPEGATE_TEST_SEED scale and replay it. Prints its figures.
 */
import fc from 'fast-check';
import { printFigures, testSeed, type Figures } from '../support/figures';
import { fuzzRequest, prepareFuzz, sendFuzz, StatusTally } from '../support/fuzz';
import { greeting, startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

const seed = testSeed();
const RUNS = Number(process.env.PIPEGATE_FUZZ_RUNS ?? 5000);
const figures: Figures = [['seed (PIPEGATE_TEST_SEED)', seed]];
const fig = (label: string, value: number | string) => figures.push([label, value]);

let rt: TestRuntime;
beforeAll(async () => {
  rt = await startTestRuntime({
    env: { ...process.env, PIPEGATE_ALLOW_PRIVATE_URLS: 'false', PIPEGATE_CALLBACK_SCHEDULE: '0', PIPEGATE_CALLBACK_TIMEOUT_MS: '300' },
  });
});
afterAll(async () => {
  await rt?.cleanup();
  printFigures('Security (long)', figures);
});

it(`never answers 5xx to ${RUNS} fuzzed requests over every route`, async () => {
  const ctx = await prepareFuzz(rt);
  const tally = new StatusTally();
  try {
    await fc.assert(
      fc.asyncProperty(fuzzRequest(ctx), async (req) => {
        const reply = await sendFuzz(rt.url, req);
        tally.add(req, reply);
        return reply === null || reply.status < 500;
      }),
      { numRuns: RUNS, seed },
    );
  } finally {
    fig('fuzz: requests sent', tally.total());
    fig('fuzz: refused by the HTTP client', tally.refused);
    fig('fuzz: answers by status', tally.summary());
    fig('fuzz: 5xx seen', tally.fiveXX.length);
  }
  expect(tally.fiveXX).toEqual([]);
});

describe('mutated API keys', () => {
  let p: Published;
  beforeAll(async () => {
    p = await rt.publishPipeline('keys', greeting);
  });

  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const mutation = (key: string) =>
    fc.oneof(
      fc.tuple(fc.nat(key.length - 1), fc.constantFrom(...ALPHABET)).map(([i, c]) => `${key.slice(0, i)}${c}${key.slice(i + 1)}`),
      fc.nat(key.length - 1).map((n) => key.slice(0, n)),
      fc.tuple(fc.nat(key.length), fc.constantFrom(...ALPHABET)).map(([i, c]) => `${key.slice(0, i)}${c}${key.slice(i)}`),
      fc.nat(key.length - 1).map((i) => `${key.slice(0, i)}${key.slice(i + 1)}`),
      fc.tuple(fc.nat(key.length - 2)).map(([i]) => `${key.slice(0, i)}${key[i + 1] ?? ''}${key[i] ?? ''}${key.slice(i + 2)}`),
    );

  it('never lets a key that differs from the issued one through', async () => {
    let tried = 0;
    let letThrough = 0;
    await fc.assert(
      fc.asyncProperty(mutation(p.apiKey), fc.boolean(), async (key, viaAuthorization) => {
        if (key === p.apiKey) return true;
        tried += 1;
        const r = await rt.caller(
          'GET',
          `/v1/deployments/${p.deploymentId}/`,
          null,
          undefined,
          viaAuthorization ? { authorization: `Api-Key ${key}` } : { 'x-api-key': key },
        );
        if (r.status !== 401) letThrough += 1;
        return r.status === 401;
      }),
      { numRuns: Math.max(200, Math.floor(RUNS / 5)), seed },
    );
    fig('keys: mutated keys tried', tried);
    fig('keys: of them not refused with 401', letThrough);
  });

  it('refuses private addresses in every spelling as a callback', async () => {
    const octets = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255));
    const privateV4 = fc.oneof(
      octets.map(([b, c, d]) => [127, b, c, d]),
      octets.map(([b, c, d]) => [10, b, c, d]),
      octets.map(([b, c, d]) => [172, 16 + (b % 16), c, d]),
      octets.map(([, c, d]) => [192, 168, c, d]),
      octets.map(([, c, d]) => [169, 254, c, d]),
      octets.map(([b, c, d]) => [100, 64 + (b % 64), c, d]),
      octets.map(([b, c, d]) => [0, b, c, d]),
    );
    const hex = (n: number, width = 2) => n.toString(16).padStart(width, '0');
    const spell = (o: number[], how: number): string => {
      const [a = 0, b = 0, c = 0, d = 0] = o;
      const int = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
      switch (how) {
        case 0:
          return `${a}.${b}.${c}.${d}`;
        case 1:
          return String(int);
        case 2:
          return `0x${hex(int, 8)}`;
        case 3:
          return o.map((x) => `0x${hex(x)}`).join('.');
        case 4:
          return o.map((x) => `0${x.toString(8)}`).join('.');
        case 5:
          return `${a}.${(b << 16) + (c << 8) + d}`;
        case 6:
          return `[::ffff:${a}.${b}.${c}.${d}]`;
        case 7:
          return `[::ffff:${hex(a)}${hex(b)}:${hex(c)}${hex(d)}]`;
        case 8:
          return `[64:ff9b::${hex(a)}${hex(b)}:${hex(c)}${hex(d)}]`;
        default:
          return `[2002:${hex(a)}${hex(b)}:${hex(c)}${hex(d)}::1]`;
      }
    };
    let tried = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(
        privateV4,
        fc.nat(9),
        fc.constantFrom('http', 'https'),
        fc.option(fc.integer({ min: 1, max: 65535 })),
        async (o, how, scheme, port) => {
          const callback = `${scheme}://${spell(o, how)}${port === null ? '' : `:${port}`}/hook`;
          tried += 1;
          const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback });
          if (r.status !== 422) accepted += 1;
          return r.status === 422 && r.body.error === 'Invalid Callback URL';
        },
      ),
      { numRuns: Math.max(200, Math.floor(RUNS / 5)), seed },
    );
    fig('guard: private callback spellings tried', tried);
    fig('guard: of them accepted', accepted);
  });
});
