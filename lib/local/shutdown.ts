/**
 * How a local runtime stops (`npm start` and `npm run start:synth` alike): requests are told
 * to come back, and executions running at the stop get the drain time to finish. Nothing is
 * failed: an execution that outlives it (waiting between its steps, or cut in the middle of
 * one) stays `running`, and the next start goes on with it from its last recorded node, as
 * after a crash (contract §9).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LocalWorkflows } from './workflow';

/** An execution id (a UUID) is this long. */
const EXECUTION_ID_LENGTH = 36;

export interface StopOptions {
  /** How long running executions may take to finish (default: PIPEGATE_DRAIN_SECONDS). */
  drainMs?: number;
}

/** What a stop did, for the operator. */
export interface StopReport {
  /** Executions whose workflow was going when the stop began. */
  running: number;
  /** Of them, finished within the drain time. */
  finished: number;
  /** Of them, not ended: left to the next start, which goes on with them. */
  left: number;
  /** Of those, cut in the middle of a step when the drain time ran out (the rest wait between steps). */
  cut: number;
  waitedMs: number;
  drainMs: number;
}

/** The answer to every request while stopping: nothing new is accepted. */
export function refuseWhileStopping(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', connection: 'close' });
  res.end(JSON.stringify({ error: 'Service Unavailable', detail: 'pipegate is shutting down' }));
}

/** Executions by id: a workflow's name is its execution's id, then its generation's or re-queue's suffix if any. */
const executions = (names: readonly string[]): Set<string> => new Set(names.map((name) => name.slice(0, EXECUTION_ID_LENGTH)));

/**
 * Waits up to `drainMs` for the workflow's executions to finish, and reports what the stop
 * leaves to the next start. The caller has already stopped whatever starts new workflows.
 */
export async function drainWorkflow(
  workflow: Pick<LocalWorkflows, 'running' | 'busy' | 'idleWithin'>,
  drainMs: number,
): Promise<StopReport> {
  const atStop = executions(workflow.running());
  const began = Date.now();
  await workflow.idleWithin(drainMs);
  const left = executions(workflow.running());
  const cut = executions(workflow.busy());
  return {
    running: atStop.size,
    finished: [...atStop].filter((id) => !left.has(id)).length,
    left: left.size,
    cut: cut.size,
    waitedMs: Date.now() - began,
    drainMs,
  };
}
