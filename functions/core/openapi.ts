/**
 * An OpenAPI 3.1 document for one deployment: what a caller may send and gets back, with the
 * published values as defaults. Generated from the contract, so it is never out of date.
 */
import { callerContract } from './contract';
import { ERRORS } from './errors';
import type { Deployment, InputValueType } from './types';
import { requestValueType } from './values';

const jsonType = (t: InputValueType): Record<string, unknown> =>
  t === 'reference' ? { type: 'string', format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' } : t === 'string' ? { type: 'string' } : t === 'integer' ? { type: 'integer' } : t === 'float' ? { type: 'number' } : { type: 'boolean' };

const errorBody = { $ref: '#/components/schemas/Error' };
const err = (description: string) => ({ description, content: { 'application/json': { schema: errorBody } } });
/** Every operation may also answer these. */
const common = {
  '500': err(ERRORS.InternalError.message),
  '503': err(`${ERRORS.ServiceUnavailable.message} (retry after the Retry-After header)`),
};

export function deploymentOpenApi(d: Pick<Deployment, 'deployment_id' | 'pipeline_id' | 'version' | 'inputs' | 'outputs' | 'published_at'>, baseUrl: string) {
  const c = callerContract(d);
  const inputProps = Object.fromEntries(
    c.inputs.map((i) => [
      i.id,
      {
        type: 'object',
        additionalProperties: false,
        required: ['value', 'value_type'],
        properties: { value: { ...jsonType(i.value_type), default: i.value }, value_type: { const: requestValueType(i.value_type) } },
      },
    ]),
  );
  const outputProps = Object.fromEntries(
    c.outputs.map((o) => [
      o.id,
      {
        type: 'object',
        required: ['value', 'value_type'],
        properties: { value: { type: ['string', 'number', 'boolean'] }, value_type: { const: 'RAW' } },
      },
    ]),
  );
  const id = { name: 'execution_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
  const timestamp = { type: ['string', 'null'], format: 'date-time' };
  return {
    openapi: '3.1.0',
    info: {
      title: `pipegate deployment ${d.deployment_id}`,
      version: `${d.version}`,
      description: `Pipeline ${d.pipeline_id}, version ${d.version}, published ${d.published_at}.`,
    },
    servers: [{ url: baseUrl }],
    security: [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }],
    paths: {
      [`/v1/deployments/${d.deployment_id}/executions/`]: {
        post: {
          operationId: 'execute',
          parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }],
          requestBody: {
            required: false,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  properties: {
                    callback: { type: 'string', format: 'uri' },
                    workflow_input: { type: 'object', additionalProperties: false, properties: inputProps },
                  },
                },
              },
            },
          },
          responses: {
            '202': { description: 'Accepted', content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } } },
            '400': err(`${ERRORS.InvalidInputStructure.message} or ${ERRORS.MissingCallbackUrl.message}`),
            '401': err(ERRORS.Unauthorized.message),
            '404': err(ERRORS.DeploymentNotFound.message),
            '413': err(ERRORS.PayloadTooLarge.message),
            '415': err(ERRORS.UnsupportedMediaType.message),
            '422': err(`${ERRORS.InvalidInput.message}, ${ERRORS.InvalidCallbackUrl.message} or ${ERRORS.IdempotencyKeyReused.message}`),
            '429': err(ERRORS.TooManyRequests.message),
            ...common,
          },
        },
      },
      '/v1/deployments/executions/{execution_id}/status/': {
        get: {
          operationId: 'status',
          parameters: [id],
          responses: {
            '200': { description: 'Status', content: { 'application/json': { schema: { $ref: '#/components/schemas/Status' } } } },
            '401': err(ERRORS.Unauthorized.message),
            '404': err(ERRORS.ExecutionNotFound.message),
            ...common,
          },
        },
      },
      '/v1/deployments/executions/{execution_id}/result/': {
        get: {
          operationId: 'result',
          parameters: [id],
          responses: {
            '200': {
              description: 'Result',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['status', 'execution_id', 'deployment_id', 'completion_duration', 'output_artifacts', 'error_message', 'response_data'],
                    properties: {
                      status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
                      execution_id: { type: 'string' },
                      deployment_id: { type: 'string' },
                      completion_duration: { type: ['integer', 'null'] },
                      output_artifacts: { type: 'array', maxItems: 0 },
                      error_message: { type: ['string', 'null'] },
                      response_data: { type: 'object', additionalProperties: false, properties: outputProps },
                    },
                  },
                },
              },
            },
            '401': err(ERRORS.Unauthorized.message),
            '404': err(ERRORS.ExecutionNotFound.message),
            '409': err(ERRORS.ExecutionNotCompleted.message),
            ...common,
          },
        },
      },
      '/v1/deployments/executions/{execution_id}/cancel/': {
        post: {
          operationId: 'cancel',
          parameters: [id],
          responses: {
            '200': { description: 'Cancelled', content: { 'application/json': { schema: { $ref: '#/components/schemas/Status' } } } },
            '401': err(ERRORS.Unauthorized.message),
            '404': err(ERRORS.ExecutionNotFound.message),
            '409': err(ERRORS.ExecutionAlreadyFinished.message),
            ...common,
          },
        },
      },
    },
    components: {
      securitySchemes: {
        ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'Api-Key <key>' },
      },
      schemas: {
        ExecutionStatus: { type: 'string', enum: ['pending', 'running', 'completed', 'failed', 'cancelled'] },
        Error: { type: 'object', required: ['error'], properties: { error: { type: 'string' }, detail: {} } },
        Accepted: {
          type: 'object',
          required: ['status', 'status_url', 'result_url', 'deployment_id', 'execution_id'],
          properties: {
            status: { const: 'queued' },
            status_url: { type: 'string', format: 'uri' },
            result_url: { type: 'string', format: 'uri' },
            deployment_id: { type: 'string', format: 'uuid' },
            execution_id: { type: 'string', format: 'uuid' },
          },
        },
        Status: {
          type: 'object',
          required: ['status', 'execution_id', 'deployment_id', 'result_url', 'created_at', 'started_at', 'completed_at', 'completion_duration', 'error_message'],
          properties: {
            status: { $ref: '#/components/schemas/ExecutionStatus' },
            execution_id: { type: 'string', format: 'uuid' },
            deployment_id: { type: 'string', format: 'uuid' },
            result_url: { type: 'string', format: 'uri' },
            created_at: { type: 'string', format: 'date-time' },
            started_at: timestamp,
            completed_at: timestamp,
            completion_duration: { type: ['integer', 'null'] },
            error_message: { type: ['string', 'null'] },
          },
        },
      },
    },
  };
}
