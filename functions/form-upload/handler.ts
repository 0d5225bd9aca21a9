import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, sourceAddress } from '../adapters/api';
import { formUpload } from '../services/form.service';

/** POST /v1/forms/{form_token}/uploads → 201 with a presigned PUT, as the callers' uploads route. */
export const createHandler = httpHandler(async (req) =>
  formUpload(req.deps, req.param('form_token'), jsonBodyText(req.event), sourceAddress(req.event)),
);

export const handler = createHandler(lambdaDeps);
