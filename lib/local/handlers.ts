/** Route handler name (lib/routes.ts) → the factory of the function its Lambda runs. */
// First: a streamed route's handler calls `awslambda.streamifyResponse` as its module loads.
import './gateway/awslambda-shim';
import type { DepsSource } from '../../functions/adapters/deps';
import type { LocalFunction } from './gateway/streaming';
import { createHandler as execute } from '../../functions/execute/handler';
import { createHandler as executionStatus } from '../../functions/execution-status/handler';
import { createHandler as executionResult } from '../../functions/execution-result/handler';
import { createHandler as executionEvents } from '../../functions/execution-events/handler';
import { createHandler as executionCancel } from '../../functions/execution-cancel/handler';
import { createHandler as uploadCreate } from '../../functions/upload-create/handler';
import { createHandler as deploymentContract } from '../../functions/deployment-contract/handler';
import { createHandler as deploymentMcp } from '../../functions/deployment-mcp/handler';
import { createHandler as deploymentOpenapi } from '../../functions/deployment-openapi/handler';
import { createHandler as deploymentDocs } from '../../functions/deployment-docs/handler';
import { createHandler as pipelineList } from '../../functions/pipeline-list/handler';
import { createHandler as pipelinePush } from '../../functions/pipeline-push/handler';
import { createHandler as pipelineGet } from '../../functions/pipeline-get/handler';
import { createHandler as runStart } from '../../functions/run-start/handler';
import { createHandler as pipelineUpload } from '../../functions/pipeline-upload/handler';
import { createHandler as runList } from '../../functions/run-list/handler';
import { createHandler as runGet } from '../../functions/run-get/handler';
import { createHandler as runEvents } from '../../functions/run-events/handler';
import { createHandler as deploymentReadiness } from '../../functions/deployment-readiness/handler';
import { createHandler as deploymentPublish } from '../../functions/deployment-publish/handler';
import { createHandler as deploymentDelete } from '../../functions/deployment-delete/handler';
import { createHandler as deploymentKeys } from '../../functions/deployment-keys/handler';
import { createHandler as deploymentConsumers } from '../../functions/deployment-consumers/handler';
import { createHandler as ownerExecutionGet } from '../../functions/owner-execution-get/handler';
import { createHandler as secretList } from '../../functions/secret-list/handler';
import { createHandler as secretPut } from '../../functions/secret-put/handler';
import { createHandler as secretDelete } from '../../functions/secret-delete/handler';
import { createHandler as ownerExecutionCancel } from '../../functions/owner-execution-cancel/handler';
import { createHandler as ownerCallbackRedeliver } from '../../functions/owner-callback-redeliver/handler';
import { createHandler as deploymentExecutions } from '../../functions/deployment-executions/handler';
import { createHandler as deploymentUsage } from '../../functions/deployment-usage/handler';
import { createHandler as assetGet } from '../../functions/asset-get/handler';
import { createHandler as formPage } from '../../functions/form-page/handler';
import { createHandler as formExecute } from '../../functions/form-execute/handler';
import { createHandler as formExecution } from '../../functions/form-execution/handler';
import { createHandler as formUpload } from '../../functions/form-upload/handler';
import { createHandler as formEvents } from '../../functions/form-events/handler';

export type HttpLambda = LocalFunction;

export const HTTP_HANDLERS: Record<string, (deps: DepsSource) => HttpLambda> = {
  execute,
  'execution-status': executionStatus,
  'execution-result': executionResult,
  'execution-events': executionEvents,
  'execution-cancel': executionCancel,
  'upload-create': uploadCreate,
  'deployment-contract': deploymentContract,
  'deployment-mcp': deploymentMcp,
  'deployment-openapi': deploymentOpenapi,
  'deployment-docs': deploymentDocs,
  'pipeline-list': pipelineList,
  'pipeline-push': pipelinePush,
  'pipeline-get': pipelineGet,
  'run-start': runStart,
  'pipeline-upload': pipelineUpload,
  'run-list': runList,
  'run-get': runGet,
  'run-events': runEvents,
  'deployment-readiness': deploymentReadiness,
  'deployment-publish': deploymentPublish,
  'deployment-delete': deploymentDelete,
  'deployment-keys': deploymentKeys,
  'deployment-consumers': deploymentConsumers,
  'owner-execution-get': ownerExecutionGet,
  'secret-list': secretList,
  'secret-put': secretPut,
  'secret-delete': secretDelete,
  'owner-execution-cancel': ownerExecutionCancel,
  'owner-callback-redeliver': ownerCallbackRedeliver,
  'deployment-executions': deploymentExecutions,
  'deployment-usage': deploymentUsage,
  'asset-get': assetGet,
  'form-page': formPage,
  'form-execute': formExecute,
  'form-execution': formExecution,
  'form-upload': formUpload,
  'form-events': formEvents,
};
