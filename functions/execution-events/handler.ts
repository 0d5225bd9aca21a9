import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, eventStreamAnswer, streamedHttpHandler } from '../adapters/api';
import { openEventStream } from '../services/events.service';

/** GET /v1/deployments/executions/{execution_id}/events/: server-sent events until `done` (contract §4). */
export const createHandler = streamedHttpHandler(
  async (req) =>
    eventStreamAnswer(
      await openEventStream(req.deps, callerAuth(req.event), req.param('execution_id'), {
        lastEventId: req.header('last-event-id'),
        baseUrl: req.baseUrl,
      }),
    ),
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
