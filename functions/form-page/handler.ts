import { lambdaDeps } from '../adapters/deps';
import { httpHandler } from '../adapters/api';
import { formFile, formPage } from '../services/form.service';

/** GET /v1/forms/{form_token}: the web form's page. GET /v1/forms/{form_token}/files/{asset}: its script and style sheet. */
export const createHandler = httpHandler(async (req) => {
  const asset = req.event.pathParameters?.asset;
  return asset !== undefined ? formFile(asset) : formPage(req.deps, req.param('form_token'), req.baseUrl);
});

export const handler = createHandler(lambdaDeps);
