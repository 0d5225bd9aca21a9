import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { sweepOnce, type SweepReport } from '../services/sweeper.service';

/**
 * Scheduled (EventBridge, every minute): one bounded sweeper pass. A pass with failed repairs
 * throws, so the function's Errors metric (and its alarm) sees it; what it repaired is logged.
 * The scheduled event carries nothing the pass needs, so it is not read.
 */
export const createHandler = (deps: DepsSource) => async (): Promise<SweepReport> => {
  const report = await sweepOnce(deps());
  if (report.errors > 0) throw new Error(`sweeper: ${report.errors} repair(s) failed; see the log lines before this one`);
  return report;
};

export const handler = createHandler(lambdaDeps);
