/**
 * A streaming handler invoked as API Gateway invokes a STREAM method, read back whole: its
 * status, headers and body bytes. Import before any streamed handler (it installs `awslambda`).
 */
import '../../lib/local/gateway/awslambda-shim';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { invokeStreamingInProcess, readStreamed, type LocalFunction } from '../../lib/local/gateway/streaming';

export interface StreamedResult {
  statusCode: number;
  headers: Record<string, string>;
  bytes: Buffer;
}

export async function invokeStreamed(fn: LocalFunction, event: APIGatewayProxyEvent, context: Context): Promise<StreamedResult> {
  const outcome = await readStreamed(await invokeStreamingInProcess(fn, event, context));
  if (!outcome.ok) throw new Error(`not a streamed proxy answer: ${outcome.reason}`);
  const parts: Buffer[] = [];
  for await (const chunk of outcome.body) parts.push(Buffer.from(chunk as Uint8Array));
  return {
    statusCode: outcome.reply.status,
    headers: Object.fromEntries(outcome.reply.headers.map(([k, v]) => [k.toLowerCase(), v])),
    bytes: Buffer.concat(parts),
  };
}
