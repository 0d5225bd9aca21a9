/**
 * lib/local/bootstrap.ts, the start and stop both local runtimes share, around a service that
 * does nothing (in-memory stores, a one-state workflow): the clean-stop mark, the repair only
 * after an unclean stop (never on a new data dir), the start-up lines that say which, the lock let go when a teardown step fails, and the schedules' one
 * pass at a time, halted before the drain.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrap, CLEAN_STOP_FILE, recoveryLine, type Boot, type Wired } from '../../lib/local/bootstrap';
import { lockDataDir } from '../../lib/local/data-dir-lock';
import { LocalWorkflow, LocalWorkflows } from '../../lib/local/workflow';
import { testDeps } from '../support/fakes';
import { memoryStores } from '../support/memory-stores';
import { sleep, waitUntil } from '../support/runtime';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const newDataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'pipegate-bootstrap-'));
  dirs.push(d);
  return d;
};

const DONE = { StartAt: 'Done', States: { Done: { Type: 'Succeed' } } };

/** A service with nothing in it; `extra` sets up more on the boot. */
function start(
  dataDir: string,
  extra: (boot: Boot) => void = () => undefined,
  repairs: { count: number } = { count: 0 },
  progress: (line: string) => void = () => undefined,
) {
  return bootstrap({ dataDir, port: 0, host: '127.0.0.1', env: {}, progress }, '.unused', async (boot): Promise<Wired> => {
    extra(boot);
    return {
      deps: testDeps(memoryStores()),
      workflow: new LocalWorkflows({
        express: new LocalWorkflow({ definition: DONE, tasks: {}, type: 'EXPRESS' }),
        standard: new LocalWorkflow({ definition: DONE, tasks: {} }),
      }),
      executionsQueue: { stop: async () => undefined },
      drainSeconds: 0,
      repair: async () => {
        repairs.count += 1;
        return 0;
      },
      start: () => undefined,
      handle: (_req, res) => res.end('ok'),
      say: () => undefined,
    };
  });
}

it('marks a finished stop, and repairs only after a start that found no mark (a new data dir has none to find)', async () => {
  // Prepare
  const dataDir = newDataDir();
  const repairs = { count: 0 };
  const said: string[][] = [];
  const startSaying = () => {
    const lines: string[] = [];
    said.push(lines);
    return start(dataDir, undefined, repairs, (l) => lines.push(l));
  };

  // Act: a first start, a clean stop, a start, then the mark removed as a kill leaves it.
  const first = (await startSaying()).booted;
  const answered = await (await fetch(first.url)).text();
  await first.stop();
  const marked = existsSync(join(dataDir, CLEAN_STOP_FILE));
  const second = (await startSaying()).booted;
  const markWhileRunning = existsSync(join(dataDir, CLEAN_STOP_FILE));
  const afterClean = { fresh: second.freshDataDir, unclean: second.uncleanStop, repaired: second.repaired, repairs: repairs.count };
  await second.stop();
  rmSync(join(dataDir, CLEAN_STOP_FILE));
  const third = (await startSaying()).booted;
  await third.stop();

  // Assess
  expect(answered).toBe('ok');
  expect({ fresh: first.freshDataDir, unclean: first.uncleanStop, repaired: first.repaired }).toEqual({
    fresh: true,
    unclean: false,
    repaired: null,
  });
  expect(marked).toBe(true);
  expect(markWhileRunning).toBe(false);
  expect(afterClean).toEqual({ fresh: false, unclean: false, repaired: null, repairs: 0 });
  expect(third.uncleanStop).toBe(true);
  expect(third.repaired).toBe(0);
  expect(repairs.count).toBe(1);
  // Each start says what it found and what it did, no more.
  expect(said).toEqual([
    ['a new data dir: nothing to recover'],
    ['the last stop finished: looking for work it left queued or owed', 'nothing was left unfinished'],
    [
      'the last stop did not finish: repairing what it may have left half written, then recovering its unfinished work',
      'nothing was left unfinished',
    ],
  ]);
});

it('says what the recovery did', () => {
  expect(recoveryLine({ resumed: 0, rerun: 0, interrupted: 0, callbacks: 0 }, null)).toBe('nothing was left unfinished');
  expect(recoveryLine({ resumed: 1, rerun: 0, interrupted: 2, callbacks: 0 }, 1)).toBe(
    'put 1 open execution back on the sweep index; recovered 1 queued, 0 interrupted and running again, 2 interrupted (marked failed), 0 callbacks resumed',
  );
});

it('lets the data dir go, and leaves no mark, when a step of the stop fails', async () => {
  // Prepare: a teardown step that throws, registered before one that must still run.
  const dataDir = newDataDir();
  let laterStepRan = false;
  const { booted } = await start(dataDir, (boot) => {
    boot.onStop(() => {
      throw new Error('could not close');
    });
    boot.onStop(() => {
      laterStepRan = true;
    });
  });

  // Act
  const stopped = await booted.stop().then(
    () => 'stopped',
    (e: unknown) => (e as Error).message,
  );
  const lock = await lockDataDir(dataDir, 0);
  await lock.release();

  // Assess
  expect(stopped).toBe('could not close');
  expect(laterStepRan).toBe(true);
  expect(existsSync(join(dataDir, CLEAN_STOP_FILE))).toBe(false);
});

it('runs a schedule one pass at a time from the end of the start, and halts it before the drain, awaiting its pass', async () => {
  // Prepare: a pass that waits on a gate, due every 5 ms.
  const dataDir = newDataDir();
  let passes = 0;
  let open: () => void = () => undefined;
  const gate = new Promise<void>((res) => (open = res));
  const { booted } = await start(dataDir, (boot) =>
    boot.every(
      5,
      async () => {
        passes += 1;
        await gate;
      },
      () => undefined,
      { now: true },
    ),
  );

  // Act: several due times pass while the first pass waits; then a stop, and the gate opened.
  await waitUntil(
    () => Promise.resolve(passes),
    (n) => n === 1,
  );
  await sleep(60);
  const duringFirstPass = passes;
  let stopped = false;
  const stopping = booted.stop().then(() => (stopped = true));
  await sleep(30);
  const stoppedBeforeThePassEnded = stopped;
  open();
  await stopping;
  await sleep(30);

  // Assess
  expect(duringFirstPass).toBe(1);
  expect(stoppedBeforeThePassEnded).toBe(false);
  expect(passes).toBe(1);
});
