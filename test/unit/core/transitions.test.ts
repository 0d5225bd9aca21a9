import fc from 'fast-check';
import {
  allowedFrom,
  canTransition,
  isTerminal,
  STATUSES,
  TERMINAL,
  TRANSITIONS,
  type ExecutionStatus,
} from '../../../functions/core/transitions';

const status = fc.constantFrom(...STATUSES);

describe('execution status transitions', () => {
  it('allows exactly the moves of contract §4', () => {
    const allowed = STATUSES.flatMap((from) => STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}→${to}`));
    expect(allowed.sort()).toEqual(
      ['pending→cancelled', 'pending→running', 'running→cancelled', 'running→completed', 'running→failed'].sort(),
    );
  });

  it('refuses every move outside the table, and every move out of a terminal status', () => {
    fc.assert(
      fc.property(status, status, (from, to) => {
        const listed = TRANSITIONS[from].includes(to);
        expect(canTransition(from, to)).toBe(listed);
        if (isTerminal(from)) expect(canTransition(from, to)).toBe(false);
        if (from === to) expect(canTransition(from, to)).toBe(false);
      }),
    );
  });

  it('names, for each target, exactly the statuses a conditional write must require', () => {
    fc.assert(
      fc.property(status, (to) => {
        const from = allowedFrom(to);
        for (const s of STATUSES) expect(from.includes(s)).toBe(canTransition(s, to));
      }),
    );
  });

  it('any sequence of attempted moves follows the table and ends at most once', () => {
    fc.assert(
      fc.property(fc.array(status, { maxLength: 20 }), (attempts) => {
        let current: ExecutionStatus = 'pending';
        let terminalReached = 0;
        for (const next of attempts) {
          if (canTransition(current, next)) {
            current = next;
            if (TERMINAL.includes(current)) terminalReached++;
          }
        }
        expect(terminalReached).toBeLessThanOrEqual(1);
      }),
    );
  });
});
