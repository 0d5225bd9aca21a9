/**
 * The deploy-time reserved concurrency check under start:synth: the template's check resource
 * runs as CloudFormation runs it, reading the emulated account through Lambda's
 * GetAccountSettings (with its role's IAM), and a reservation the account cannot give fails the
 * start with the deploy's message, naming the setting. The default (nothing reserved) starts on
 * an account of 10; `-c reservedConcurrency=N` is the template edit that setting makes
 * (test/synth/synth-helpers.ts `reserving`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from '../../../lib/synth/assembly';
import { startSynthRuntime, type SynthRuntime } from '../../../lib/synth/runtime';
import { minimumReservation } from '../../../lib/concurrency';
import { allFunctionNames } from '../../../lib/stacks/permissions';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../../support/synth';
import { reserving, withTemplate } from '../../synth/synth-helpers';

jest.setTimeout(SYNTH_TIMEOUT_MS);

describe('the reserved concurrency check under start:synth', () => {
  const dirs: string[] = [];
  const running: SynthRuntime[] = [];
  const start = async (dataDir: string, accountConcurrency: number, edit?: (t: Template) => void, accountReservedElsewhere = 0) => {
    const assembly = edit ? withTemplate(await testAssembly(), 'Pipegate', edit) : await testAssembly();
    const rt = await startSynthRuntime({
      port: 0,
      inMemory: true,
      log: false,
      dataDir,
      assembly,
      accountConcurrency,
      accountReservedElsewhere,
    });
    running.push(rt);
    return rt;
  };
  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'pipegate-synth-concurrency-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const rt of running) await rt.stop({ drainMs: 0 });
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('starts the default template, which reserves nothing, on a new account of 10 units', async () => {
    // Act
    const rt = await start(newDir(), 10);
    // Assess
    expect(rt.url).toMatch(/^http:/);
    await rt.stop({ drainMs: 0 });
  });

  it('fails the start, as the deploy would fail before any function is touched, when the account of 10 cannot give the reservation', async () => {
    // Act
    const least = minimumReservation(allFunctionNames());
    const started = start(newDir(), 10, reserving(least));
    // Assess
    await expect(started).rejects.toThrow(
      new RegExp(`ConcurrencyCheckResource: custom resource Create failed: reservedConcurrency=${least} .*set reservedConcurrency=0`),
    );
  });

  it("counts other functions' reservations, and on a redeploy the stack's own, as Lambda's account settings report them", async () => {
    // Prepare: an account of 1,000 given over to pipegate (maxAccountShare=100) where others hold 300: 600 may be reserved.
    const dir = newDir();
    const first = await start(dir, 1_000, reserving(450, 100), 300);
    await first.stop({ drainMs: 0 });
    // Act: the functions now hold 450's plan and the account reports 250 unreserved; 550 still fits.
    const second = await start(dir, 1_000, reserving(550, 100), 300);
    await second.stop({ drainMs: 0 });
    const third = start(dir, 1_000, reserving(700, 100), 300);
    // Assess
    await expect(third).rejects.toThrow(/reservedConcurrency=700 reserves \d+ units.*with 300 reserved by other functions.*at most 600/);
  });
});
