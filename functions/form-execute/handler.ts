import { lambdaDeps } from '../adapters/deps';
import { bodyText, httpHandler, sourceAddress } from '../adapters/api';
import { formExecute } from '../services/form.service';

/** POST /v1/forms/{form_token}/executions → 202 with the execution's URL under the form's link. */
export const createHandler = httpHandler(
  async (req) =>
    formExecute(req.deps, {
      token: req.param('form_token'),
      body: bodyText(req.event),
      contentType: req.header('content-type'),
      baseUrl: req.baseUrl,
      address: sourceAddress(req.event),
    }),
  { inlineAssets: true },
);

export const handler = createHandler(lambdaDeps);
