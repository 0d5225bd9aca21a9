/**
 * Lambda response streaming, typed. Lambda's Node.js runtime provides the `awslambda` global
 * (`streamifyResponse`, `HttpResponseStream.from`) before it loads a handler; the local runtimes
 * install a stand-in with the same behaviour (lib/local/gateway/awslambda-shim.ts), so one
 * handler runs everywhere. Nothing here falls back silently: a streamed route without the
 * global fails at load, not with a half-working answer.
 */
import type { Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

/** What precedes the body of a streamed proxy answer (API Gateway's "metadata"). */
export interface HttpResponseMetadata {
  statusCode: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  cookies?: string[];
}

export type StreamingHandler = (event: APIGatewayProxyEvent, responseStream: Writable, context: Context) => Promise<void>;

export interface AwsLambdaGlobal {
  streamifyResponse(handler: StreamingHandler): StreamingHandler;
  HttpResponseStream: { from(stream: Writable, metadata: HttpResponseMetadata): Writable };
}

/** The runtime's mark on a streaming handler: it invokes such a handler with a response stream. */
export const STREAMING_MARK = Symbol.for('aws.lambda.runtime.handler.streaming');
export const STREAMING_RESPONSE = 'response';

/** The runtime's `awslambda`; throws where there is none (neither Lambda nor a local runtime). */
export function awslambda(): AwsLambdaGlobal {
  // The AWS SDK may define an `awslambda` of its own (InvokeStore) without the streaming API.
  const g = (globalThis as unknown as { awslambda?: Partial<AwsLambdaGlobal> }).awslambda;
  if (typeof g?.streamifyResponse !== 'function' || !g.HttpResponseStream)
    throw new Error(
      "awslambda is not defined: Lambda's Node.js runtime provides it, and locally lib/local/gateway/awslambda-shim.ts installs it",
    );
  return g as AwsLambdaGlobal;
}

export const isStreamingHandler = (fn: unknown): fn is StreamingHandler =>
  typeof fn === 'function' && (fn as unknown as Record<symbol, unknown>)[STREAMING_MARK] === STREAMING_RESPONSE;
