/** An execution's time-out on its state machine, read by the step task and the sweeper alike. */
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../lib/workflow-budget';
import type { Deps } from '../adapters/deps';
import type { PipelineDefinition, WorkflowType } from '../core/types';
import { executionTimeoutMsOf } from '../core/workflow-type';

/** Its definition's own, else the configured default; on Express within what Express allows. */
export const executionTimeoutMs = (d: Deps, def: Pick<PipelineDefinition, 'timeout_ms'>, workflow: WorkflowType): number =>
  executionTimeoutMsOf(def, workflow, d.config.executionTimeoutMs, EXPRESS_MAX_EXECUTION_TIMEOUT_MS);
