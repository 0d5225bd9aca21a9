/** Route handler name (lib/routes.ts) → the function its Lambda runs. */
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { handler as execute } from '../../functions/execute/handler';
import { handler as executionStatus } from '../../functions/execution-status/handler';
import { handler as executionResult } from '../../functions/execution-result/handler';
import { handler as executionCancel } from '../../functions/execution-cancel/handler';
import { handler as deploymentContract } from '../../functions/deployment-contract/handler';
import { handler as deploymentOpenapi } from '../../functions/deployment-openapi/handler';
import { handler as pipelineList } from '../../functions/pipeline-list/handler';
import { handler as pipelinePush } from '../../functions/pipeline-push/handler';
import { handler as pipelineGet } from '../../functions/pipeline-get/handler';
import { handler as runStart } from '../../functions/run-start/handler';
import { handler as runList } from '../../functions/run-list/handler';
import { handler as runGet } from '../../functions/run-get/handler';
import { handler as deploymentReadiness } from '../../functions/deployment-readiness/handler';
import { handler as deploymentPublish } from '../../functions/deployment-publish/handler';
import { handler as deploymentDelete } from '../../functions/deployment-delete/handler';
import { handler as deploymentKeys } from '../../functions/deployment-keys/handler';
import { handler as ownerExecutionGet } from '../../functions/owner-execution-get/handler';
import { handler as secretList } from '../../functions/secret-list/handler';
import { handler as secretPut } from '../../functions/secret-put/handler';
import { handler as secretDelete } from '../../functions/secret-delete/handler';

export type HttpLambda = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

export const HTTP_HANDLERS: Record<string, HttpLambda> = {
  execute,
  'execution-status': executionStatus,
  'execution-result': executionResult,
  'execution-cancel': executionCancel,
  'deployment-contract': deploymentContract,
  'deployment-openapi': deploymentOpenapi,
  'pipeline-list': pipelineList,
  'pipeline-push': pipelinePush,
  'pipeline-get': pipelineGet,
  'run-start': runStart,
  'run-list': runList,
  'run-get': runGet,
  'deployment-readiness': deploymentReadiness,
  'deployment-publish': deploymentPublish,
  'deployment-delete': deploymentDelete,
  'deployment-keys': deploymentKeys,
  'owner-execution-get': ownerExecutionGet,
  'secret-list': secretList,
  'secret-put': secretPut,
  'secret-delete': secretDelete,
};
