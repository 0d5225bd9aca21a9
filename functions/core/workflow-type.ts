/** The two state machines' names, as records, messages and views carry them (functions/core/workflow-choice.ts decides). */
import type { PipelineDefinition, WorkflowType } from './types';

export const WORKFLOW_TYPES = ['express', 'standard'] as const satisfies readonly WorkflowType[];

/**
 * An execution's time-out: its definition's `timeout_ms`, else the configured default, and on
 * Express never past what an Express execution allows (a default raised after the version was
 * pushed does not make an Express execution outlive its state machine).
 */
export function executionTimeoutMsOf(
  def: Pick<PipelineDefinition, 'timeout_ms'>,
  workflow: WorkflowType,
  defaultMs: number,
  expressMaxMs: number,
): number {
  const asked = def.timeout_ms ?? defaultMs;
  return workflow === 'express' ? Math.min(asked, expressMaxMs) : asked;
}
