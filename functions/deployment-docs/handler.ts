import { lambdaDeps } from '../adapters/deps';
import { httpHandler } from '../adapters/api';
import { docsFile, docsPage } from '../services/docs.service';

/**
 * GET /v1/deployments/{deployment_id}/docs: the deployment's docs page (no key needed to load
 * it; it asks for one). GET /v1/docs/{asset}: the page's script and Swagger UI's files.
 */
export const createHandler = httpHandler(async (req) => {
  const asset = req.event.pathParameters?.asset;
  return asset !== undefined ? docsFile(asset) : docsPage(req.param('deployment_id'), req.baseUrl);
});

export const handler = createHandler(lambdaDeps);
