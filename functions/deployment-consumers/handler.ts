import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { AppError } from '../core/errors';
import {
  createConsumer,
  listConsumers,
  revokeConsumer,
  rotateConsumerKey,
  setDeploymentKeyLimits,
  updateConsumer,
} from '../services/consumers.service';

/**
 * A deployment's consumers and key limits (one function for their six routes, all rare owner
 * calls): POST/GET …/deployment/consumers, PATCH/DELETE …/consumers/{consumer_id},
 * POST …/consumers/{consumer_id}/keys, PUT …/deployment/limits. Answers with a key are never
 * cached.
 */
export const createHandler = httpHandler(async (req) => {
  const pipelineId = req.param('pipeline_id');
  const consumerId = req.param('consumer_id');
  const body = jsonBodyText(req.event);
  const noStore = { 'cache-control': 'no-store' };
  const route = `${req.event.httpMethod} ${req.event.resource.replace(/\/+$/, '')}`;
  if (route.endsWith('/deployment/limits')) return json(200, await setDeploymentKeyLimits(req.deps, pipelineId, body));
  if (route.endsWith('/consumers/{consumer_id}/keys'))
    return json(200, await rotateConsumerKey(req.deps, pipelineId, consumerId, body), noStore);
  if (route.startsWith('POST ')) return json(201, await createConsumer(req.deps, pipelineId, body), noStore);
  if (route.startsWith('GET ')) return json(200, await listConsumers(req.deps, pipelineId));
  if (route.startsWith('PATCH ')) return json(200, await updateConsumer(req.deps, pipelineId, consumerId, body));
  if (route.startsWith('DELETE ')) {
    await revokeConsumer(req.deps, pipelineId, consumerId);
    return json(204);
  }
  throw new AppError('MethodNotAllowed');
});

export const handler = createHandler(lambdaDeps);
