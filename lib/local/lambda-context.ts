import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export const LOCAL_REGION = 'local';
export const LOCAL_ACCOUNT = '000000000000';
const LAMBDA_TIMEOUT_MS = 30_000;

export interface LambdaContextOptions {
  timeoutMs?: number;
  memoryMb?: number;
  region?: string;
  account?: string;
  /** The physical function name, when it differs from the name the context is asked for. */
  functionArn?: string;
}

/** A Lambda context object like the Node.js runtime's, for one invocation. */
export function createLambdaContext(functionName: string, timeoutMsOrOptions: number | LambdaContextOptions = {}): Context {
  const o: LambdaContextOptions = typeof timeoutMsOrOptions === 'number' ? { timeoutMs: timeoutMsOrOptions } : timeoutMsOrOptions;
  const deadline = Date.now() + (o.timeoutMs ?? LAMBDA_TIMEOUT_MS);
  const requestId = randomUUID();
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn:
      o.functionArn ?? `arn:aws:lambda:${o.region ?? LOCAL_REGION}:${o.account ?? LOCAL_ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: String(o.memoryMb ?? 1024),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${day}/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
