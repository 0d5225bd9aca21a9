import { lambdaDeps } from '../adapters/deps';
import { streamedJsonHandler, json } from '../adapters/api';
import { listExecutions } from '../services/owner-executions.service';

/** GET /v1/pipelines/{pipeline_id}/deployment/executions?status=&since=&limit=&cursor= (newest first) */
export const createHandler = streamedJsonHandler(async (req) =>
  json(
    200,
    await listExecutions(req.deps, req.param('pipeline_id'), {
      status: req.query('status'),
      since: req.query('since'),
      limit: req.query('limit'),
      cursor: req.query('cursor'),
    }),
  ),
);

export const handler = createHandler(lambdaDeps);
