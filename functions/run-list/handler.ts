import { lambdaDeps } from '../adapters/deps';
import { streamedJsonHandler, json } from '../adapters/api';
import { listRuns } from '../services/runs.service';

/** GET /v1/pipelines/{pipeline_id}/runs?limit=&cursor= (newest first) */
export const createHandler = streamedJsonHandler(async (req) =>
  json(200, await listRuns(req.deps, req.param('pipeline_id'), req.query('limit'), req.query('cursor'), req.baseUrl)),
);

export const handler = createHandler(lambdaDeps);
