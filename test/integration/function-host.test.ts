/**
 * start:synth's Lambda sandboxes (lib/synth/function-host.ts) keep Lambda's clock: an
 * invocation's time-out counts from the end of its environment's Init, not from the moment
 * the environment was made, and an Init past its limit eats into the time-out. Each module
 * here blocks its own worker thread at load for as long as the case needs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FunctionHost, type FunctionError, type FunctionSpec } from '../../lib/synth/function-host';

let dir: string;
const hosts: FunctionHost[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'pipegate-function-host-'));
});
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** A function whose module takes `initMs` to load and whose handler takes `runMs`. */
function host(name: string, initMs: number, runMs: number, timeoutSeconds: number, initLimitMs?: number): FunctionHost {
  const file = join(dir, `${name}.js`);
  writeFileSync(
    file,
    `const block = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
block(${initMs});
exports.handler = async (event, context) => {
  const remaining = context.getRemainingTimeInMillis();
  await new Promise((r) => setTimeout(r, ${runMs}));
  return { echo: event, remaining };
};
`,
  );
  const spec: FunctionSpec = {
    name,
    arn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
    file,
    exportName: 'handler',
    root: dir,
    timeoutSeconds,
    memoryMb: 128,
    env: {},
  };
  const h = new FunctionHost(spec, initLimitMs === undefined ? {} : { initLimitMs });
  hosts.push(h);
  return h;
}

test('a slow Init is not part of the time-out: a 4 s module load under a 3 s time-out answers, with its whole time-out left', async () => {
  // Prepare
  const h = host('slow-init', 4000, 0, 3);

  // Act
  const out = (await h.invoke({ n: 1 })) as { echo: unknown; remaining: number };

  // Assess
  expect(out.echo).toEqual({ n: 1 });
  expect(out.remaining).toBeGreaterThan(2000);
  expect(h.stats).toMatchObject({ coldStarts: 1, timeouts: 0 });
});

test('the handler itself is held to the time-out: 3 s of work under a 1 s time-out is Sandbox.Timedout', async () => {
  // Prepare
  const h = host('slow-run', 0, 3000, 1);

  // Act
  const err = (await h.invoke({}).catch((e: unknown) => e)) as FunctionError;

  // Assess
  expect(err.errorType).toBe('Sandbox.Timedout');
  expect(h.stats.timeouts).toBe(1);
});

test('an Init past its limit eats into the time-out: a 6 s load with a 1 s limit and a 2 s time-out times out', async () => {
  // Prepare
  const h = host('init-past-limit', 6000, 0, 2, 1000);

  // Act
  const err = (await h.invoke({}).catch((e: unknown) => e)) as FunctionError;

  // Assess
  expect(err.errorType).toBe('Sandbox.Timedout');
});
