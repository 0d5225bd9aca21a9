/** Execution statuses and the only moves between them (contract §4). */
export const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type ExecutionStatus = (typeof STATUSES)[number];

export const TERMINAL: readonly ExecutionStatus[] = ['completed', 'failed', 'cancelled'];

/** from → the statuses it may move to. Anything not listed here never happens. */
export const TRANSITIONS: Readonly<Record<ExecutionStatus, readonly ExecutionStatus[]>> = {
  pending: ['running', 'cancelled'],
  running: ['completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export const isTerminal = (s: ExecutionStatus): boolean => TERMINAL.includes(s);

/** For a status read from outside (an HTTP answer, a stored item): is it a terminal one? */
export const isTerminalStatus = (s: unknown): s is ExecutionStatus => typeof s === 'string' && (TERMINAL as readonly string[]).includes(s);

export const canTransition = (from: ExecutionStatus, to: ExecutionStatus): boolean => TRANSITIONS[from].includes(to);

/** The statuses from which `to` may be reached: what a conditional write must require. */
export const allowedFrom = (to: ExecutionStatus): ExecutionStatus[] => STATUSES.filter((from) => canTransition(from, to));
