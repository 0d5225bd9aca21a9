/**
 * The state machine a version's executions run on (functions/core/workflow-choice.ts), with the
 * Express allowance lib/workflow-budget.ts computes from the state machine's own document. The
 * functions that push, run, publish and submit decide with it; the tasks and the sweeper read
 * what was decided (functions/services/workflows.ts), so they carry no node registry for it.
 */
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../lib/workflow-budget';
import { workflowFor, type WorkflowChoice } from '../core/workflow-choice';
import type { PipelineDefinition, PipelineVersion, WorkflowType } from '../core/types';
import type { Deps } from '../adapters/deps';

/** The choice for a definition about to be pushed. */
export const chooseWorkflow = (def: PipelineDefinition): WorkflowChoice => workflowFor(def, EXPRESS_MAX_EXECUTION_TIMEOUT_MS);

/** A version's: as stored when it was pushed, or for a version pushed before it was stored, decided now the same way. */
export const versionWorkflow = (v: Pick<PipelineVersion, 'definition' | 'workflow'>): WorkflowType =>
  v.workflow ?? chooseWorkflow(v.definition).type;

/** The version's, read (a container keeps the versions it has read); Standard if the version is gone. */
export async function workflowOfVersion(d: Deps, pipelineId: string, version: number): Promise<WorkflowType> {
  const v = await d.pipelines.getVersion(pipelineId, version);
  return v === null ? 'standard' : versionWorkflow(v);
}
