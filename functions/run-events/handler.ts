import { lambdaDeps } from '../adapters/deps';
import { eventStreamAnswer, streamedHttpHandler } from '../adapters/api';
import { openRunEventStream } from '../services/events.service';

/** GET /v1/pipelines/{pipeline_id}/runs/{run_id}/events: a run's server-sent events until `done` (contract §7). */
export const createHandler = streamedHttpHandler(async (req) =>
  eventStreamAnswer(
    await openRunEventStream(req.deps, req.param('pipeline_id'), req.param('run_id'), {
      lastEventId: req.header('last-event-id'),
      baseUrl: req.baseUrl,
    }),
  ),
);

export const handler = createHandler(lambdaDeps);
