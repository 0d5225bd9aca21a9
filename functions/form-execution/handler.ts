import { lambdaDeps } from '../adapters/deps';
import { streamedJsonHandler, preferredWait } from '../adapters/api';
import { formExecution } from '../services/form.service';

/** GET /v1/forms/{form_token}/executions/{execution_id}: progress and, once finished, the result (`Prefer: wait=N`). */
export const createHandler = streamedJsonHandler(async (req) =>
  formExecution(req.deps, req.param('form_token'), req.param('execution_id'), req.baseUrl, preferredWait(req)),
);

export const handler = createHandler(lambdaDeps);
