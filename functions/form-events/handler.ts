import { lambdaDeps } from '../adapters/deps';
import { eventStreamAnswer, sourceAddress, streamedHttpHandler } from '../adapters/api';
import { openFormEventStream } from '../services/form.service';

/** GET /v1/forms/{form_token}/executions/{execution_id}/events: a form execution's server-sent events until `done` (contract §4a). */
export const createHandler = streamedHttpHandler(async (req) =>
  eventStreamAnswer(
    await openFormEventStream(req.deps, {
      token: req.param('form_token'),
      executionId: req.param('execution_id'),
      address: sourceAddress(req.event),
      lastEventId: req.header('last-event-id'),
      baseUrl: req.baseUrl,
    }),
  ),
);

export const handler = createHandler(lambdaDeps);
