import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, callerAuth, httpHandler, json } from '../adapters/api';
import { createUpload } from '../services/uploads.service';

/**
 * POST /v1/deployments/{deployment_id}/uploads/ → 201 with a presigned PUT for one file and
 * the ASSET value to put in workflow_input once the bytes are there.
 */
export const createHandler = httpHandler(async (req) =>
  json(201, await createUpload(req.deps, callerAuth(req.event), req.param('deployment_id'), jsonBodyText(req.event))),
);

export const handler = createHandler(lambdaDeps);
