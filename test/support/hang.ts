/**
 * Time limits in tests are for hangs, never for speed: the machine running the suite may be
 * loaded many times over (other suites, other work), and a limit it can reach while nothing is
 * wrong makes a flaky test. HANG_MS bounds one wait for a condition (a status, a log line, a
 * process that starts, an event); jest's testTimeout (jest.config.js, 300 s) bounds a whole
 * test or hook and is longer, so a wait that hangs reports its own condition and last value.
 * A test waits for the condition itself, never for a guess of how long it takes.
 */
export const HANG_MS = 120_000;
