/**
 * How a local runtime stops (`npm start` and `npm run start:synth` alike): requests are told
 * to come back, executions running at the stop get the drain time to finish, and what outlives
 * it is failed as interrupted once, through the same conditional write a restart uses, with
 * its callback owed (delivered at the next start).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deps } from '../../functions/adapters/deps';
import { failInterrupted } from '../../functions/services/lifecycle.service';
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
  /** Of them, failed as interrupted when the drain time ran out. */
  interrupted: number;
  waitedMs: number;
  drainMs: number;
}

/** The answer to every request while stopping: nothing new is accepted. */
export function refuseWhileStopping(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', connection: 'close' });
  res.end(JSON.stringify({ error: 'Service Unavailable', detail: 'pipegate is shutting down' }));
}

/**
 * Waits up to `drainMs` for the workflow's executions, then fails those still running as
 * interrupted. The caller has already stopped whatever starts new ones.
 */
export async function drainWorkflow(
  workflow: Pick<LocalWorkflows, 'running' | 'idleWithin'>,
  d: Deps,
  drainMs: number,
  onError: (executionId: string, err: unknown) => void,
): Promise<StopReport> {
  const atStop = workflow.running();
  const began = Date.now();
  await workflow.idleWithin(drainMs);
  const left = workflow.running();
  let interrupted = 0;
  // A workflow's name is its execution's id, then its generation's or re-queue's suffix if any.
  for (const id of new Set(left.map((name) => name.slice(0, EXECUTION_ID_LENGTH)))) {
    const e = await d.executions.get(id, d.clock.now(), true).catch(() => null);
    if (e?.status !== 'running') continue;
    await failInterrupted(d, e, 'a service shutdown').then(
      () => (interrupted += 1),
      (err: unknown) => onError(id, err),
    );
  }
  return { running: atStop.length, finished: atStop.length - left.length, interrupted, waitedMs: Date.now() - began, drainMs };
}
