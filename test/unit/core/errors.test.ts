import { AppError, ERRORS, toErrorResponse } from '../../../functions/core/errors';

describe('the error catalog (contract §5)', () => {
  it.each([
    ['ExecutionNotCompleted', 409, 'Execution not completed'],
    ['Unauthorized', 401, 'Unauthorized'],
    ['DeploymentNotFound', 404, 'Deployment Not Found'],
    ['ExecutionNotFound', 404, 'Execution Not Found'],
    ['InvalidInputStructure', 400, 'Invalid Input Structure'],
    ['InvalidInput', 422, 'Invalid Input'],
    ['MissingCallbackUrl', 400, 'Missing Callback URL'],
    ['InvalidCallbackUrl', 422, 'Invalid Callback URL'],
    ['PayloadTooLarge', 413, 'Payload Too Large'],
    ['UnsupportedMediaType', 415, 'Unsupported Media Type'],
    ['IdempotencyKeyReused', 422, 'Idempotency Key Reused'],
    ['TooManyRequests', 429, 'Too Many Requests'],
    ['InternalError', 500, 'Internal Error'],
    ['PublishNoSuccessfulRun', 409, 'To deploy the workflow, there must be at least one successful execution.'],
  ] as const)('%s is %i %s', (code, status, message) => {
    expect(ERRORS[code]).toEqual({ status, message });
    expect(new AppError(code).body()).toEqual({ error: message });
  });

  it('carries detail and named fields in the body', () => {
    const e = new AppError('ExecutionNotCompleted', undefined, { status: 'running' });
    expect(toErrorResponse(e, 'r1')).toEqual({ status: 409, body: { error: 'Execution not completed', status: 'running' } });
    expect(new AppError('InvalidInput', "unknown input 'x'").body()).toEqual({ error: 'Invalid Input', detail: "unknown input 'x'" });
  });

  it('turns anything unexpected into 500 with the request id and nothing of the cause', () => {
    const out = toErrorResponse(new TypeError('cannot read x of undefined at /var/task/index.js:1'), 'req-9');
    expect(out).toEqual({ status: 500, body: { error: 'Internal Error', request_id: 'req-9' } });
  });
});
