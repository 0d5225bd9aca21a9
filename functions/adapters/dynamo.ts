import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { HttpHandler } from '@smithy/core/protocols';
import type { RequestSigner } from '@smithy/types';

export interface DynamoOptions {
  region: string;
  endpoint?: string;
}

/** How a client of this process reaches an endpoint the process serves itself. */
export interface InProcessEndpoint {
  /** Hands the request to the store without a socket. */
  requestHandler: HttpHandler;
  /** Writes the Authorization header the store reads (dynalite checks its form, not the HMAC). */
  signer: RequestSigner;
}

/**
 * Endpoints this process serves itself (the local runtime's dynalite, see lib/local/dynamo.ts).
 * A client for any other endpoint, or for AWS, goes over HTTP and signs as usual.
 */
const inProcess = new Map<string, InProcessEndpoint>();

/** Clients created from now on for `endpoint` reach it through `how`; the returned function undoes it. */
export function serveInProcess(endpoint: string, how: InProcessEndpoint): () => void {
  inProcess.set(endpoint, how);
  return () => {
    if (inProcess.get(endpoint) === how) inProcess.delete(endpoint);
  };
}

/** Client settings for a custom endpoint (dynalite); none for AWS. */
export function localEndpointConfig(endpoint: string | undefined) {
  if (!endpoint) return {};
  const served = inProcess.get(endpoint);
  return {
    endpoint,
    // dynalite accepts any credentials; the SDK still insists on having some.
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    ...(served ? { requestHandler: served.requestHandler, signer: served.signer } : {}),
  };
}

/** One document client per process, created at cold start and handed to the stores. */
export function createDocumentClient(opts: DynamoOptions): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: opts.region,
    ...localEndpointConfig(opts.endpoint),
    maxAttempts: 3,
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

export const isConditionFailure = (e: unknown): boolean =>
  typeof e === 'object' && e !== null && (e as { name?: string }).name === 'ConditionalCheckFailedException';

/**
 * A conditional write (a PutItem, UpdateItem or DeleteItem with a ConditionExpression): its
 * output, or null when the condition did not hold; any other failure is thrown. Every store's
 * conditional write goes through here, so losing a race is always a null, never an exception
 * to catch at each write.
 */
export async function conditionalWrite<T extends object>(write: Promise<T>): Promise<T | null> {
  try {
    return await write;
  } catch (e) {
    if (isConditionFailure(e)) return null;
    throw e;
  }
}

export const OWNER_SECRETS_PK = 'OWNERSECRETS';

export const keys = {
  pipeline: (id: string) => ({ pk: `PIPELINE#${id}`, sk: 'META' }),
  version: (id: string, v: number) => ({ pk: `PIPELINE#${id}`, sk: `VERSION#${String(v).padStart(10, '0')}` }),
  deployment: (id: string) => ({ pk: `DEPLOYMENT#${id}`, sk: 'DEPLOYMENT' }),
  /** Beside its deployment, so one Query lists a deployment's consumers. */
  consumer: (deploymentId: string, consumerId: string) => ({ pk: `DEPLOYMENT#${deploymentId}`, sk: `CONSUMER#${consumerId}` }),
  /** A limit counter of a subject (a consumer, or the deployment's own key). */
  limit: (deploymentId: string, subject: string, counter: string) => ({ pk: `LIMIT#${deploymentId}#${subject}`, sk: counter }),
  execution: (id: string) => ({ pk: `EXEC#${id}`, sk: 'EXEC' }),
  idempotency: (deploymentId: string, keyHash: string) => ({ pk: `IDEM#${deploymentId}#${keyHash}`, sk: 'IDEM' }),
  upload: (id: string) => ({ pk: `UPLOAD#${id}`, sk: 'UPLOAD' }),
  formLink: (tokenHash: string) => ({ pk: `FORM#${tokenHash}`, sk: 'FORM' }),
  formRate: (key: string, windowStart: number) => ({ pk: `FORMRATE#${key}`, sk: String(windowStart) }),
  /** Every owner secret shares one partition, so one Query reads them all. */
  ownerSecret: (name: string) => ({ pk: OWNER_SECRETS_PK, sk: `SECRET#${name}` }),
};

/** DynamoDB refuses an empty ExpressionAttributeValues map. */
export const nonEmpty = <T extends Record<string, unknown>>(values: T): T | undefined =>
  Object.keys(values).length > 0 ? values : undefined;

type Page = { Items?: Record<string, unknown>[]; LastEvaluatedKey?: Record<string, unknown> };

/** Every item of a Query or Scan, following LastEvaluatedKey page by page. */
export async function allItems(page: (start: Record<string, unknown> | undefined) => Promise<Page>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await page(start);
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
