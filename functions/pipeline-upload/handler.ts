import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { createPipelineUpload } from '../services/pipeline-uploads.service';

/**
 * POST /v1/pipelines/{pipeline_id}/uploads → 201 with a presigned PUT for one file and the
 * asset value to put in a run's inputs once the bytes are there.
 */
export const createHandler = httpHandler(async (req) =>
  json(201, await createPipelineUpload(req.deps, req.param('pipeline_id'), jsonBodyText(req.event))),
);

export const handler = createHandler(lambdaDeps);
