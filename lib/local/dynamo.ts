/**
 * DynamoDB on one machine: dynalite (LevelDB on disk, or in memory for tests) with the table
 * built from the same definition as the cloud (lib/tables.ts).
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  PutItemCommand,
  ResourceInUseException,
  ScanCommand,
  type AttributeValue,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { HttpHandler } from '@smithy/core/protocols';
import type { HttpRequest, HttpResponse } from '@smithy/core/transport';
import type { RequestSigner } from '@smithy/types';
import dynalite from 'dynalite';
import { localEndpointConfig, serveInProcess } from '../../functions/adapters/dynamo';
import { MAIN_TABLE, type TableDefinition } from '../tables';

export interface LocalDynamo {
  endpoint: string;
  close(): Promise<void>;
}

export interface DynaliteOptions {
  /** Persist on disk here (in memory without). */
  path?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /**
   * Clients this process builds for the endpoint hand their requests straight to dynalite
   * (see inProcessHandler) instead of over loopback HTTP. The endpoint listens either way, for
   * clients in other processes.
   */
  inProcess?: boolean;
}

/** Starts dynalite on 127.0.0.1 (port 0 = any free port); `path` persists it on disk. */
export async function startDynalite(opts: DynaliteOptions = {}): Promise<LocalDynamo> {
  const server: Server = dynalite({ path: opts.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const listener = server.listeners('request')[0] as RequestListener | undefined;
  if (!listener) throw new Error('dynalite started without a request listener');
  const gate = new InProcessGate();
  const unregister = opts.inProcess
    ? serveInProcess(endpoint, { requestHandler: inProcessHandler(listener, gate), signer: localSigner })
    : () => undefined;
  return {
    endpoint,
    close: async () => {
      // Calls under way finish first: dynalite throws (uncaught) when one reaches a closed database.
      await gate.close(IN_PROCESS_CLOSE_WAIT_MS);
      await new Promise<void>((resolve) => {
        unregister();
        server.closeAllConnections?.();
        server.close(() => resolve());
      });
    },
  };
}

/** The longest a closing store waits for the in-process calls under way (each takes milliseconds). */
const IN_PROCESS_CLOSE_WAIT_MS = 5_000;

/**
 * The in-process calls under way, and whether new ones may start: once closing, a call fails
 * as one to a closed endpoint does, and the close waits for those already going.
 */
export class InProcessGate {
  private open = true;
  private going = 0;
  private drained: (() => void) | undefined;

  /** False once closing: the call is refused. */
  enter(): boolean {
    if (!this.open) return false;
    this.going += 1;
    return true;
  }

  leave(): void {
    this.going -= 1;
    if (this.going === 0) this.drained?.();
  }

  async close(waitMs: number): Promise<void> {
    this.open = false;
    if (this.going === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.drained = resolve;
      timer = setTimeout(resolve, waitMs);
    }).finally(() => clearTimeout(timer));
  }
}

/**
 * An SDK request handler that gives the signed request to dynalite's own HTTP request listener
 * in this process, as a request and response object pair, instead of writing it to a socket
 * that the same process then reads back. dynalite sees the same method, path, headers and
 * body, and answers with the same status, headers and body, so the SDK's serialisation,
 * retries and error parsing run unchanged; what is saved is the HTTP on both sides of every
 * call, about half a call's cost here (docs/performance.md). Clients that use it also sign
 * with localSigner.
 */
export function inProcessHandler(listener: RequestListener, gate: InProcessGate = new InProcessGate()): HttpHandler {
  return {
    metadata: { handlerProtocol: 'in-process' },
    updateHttpClientConfig: () => undefined,
    httpHandlerConfigs: () => ({}),
    handle: (request: HttpRequest, options?: { abortSignal?: { aborted: boolean } }) =>
      new Promise<{ response: HttpResponse }>((resolve, reject) => {
        if (options?.abortSignal?.aborted) {
          const err = new Error('Request aborted');
          err.name = 'AbortError';
          reject(err);
          return;
        }
        // A call after the store closed (a step still going when its runtime stopped) fails
        // as a call to a closed endpoint does, instead of reaching the closed database.
        if (!gate.enter()) {
          reject(
            Object.assign(new Error(`connect ECONNREFUSED ${request.hostname}:${String(request.port ?? '')}`), { code: 'ECONNREFUSED' }),
          );
          return;
        }
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
        const query = new URLSearchParams();
        for (const [k, v] of Object.entries(request.query ?? {}))
          for (const x of Array.isArray(v) ? v : [v]) if (x !== null && x !== undefined) query.append(k, x);
        const search = query.toString();

        const req = Object.assign(new EventEmitter(), {
          method: request.method,
          url: `${request.path}${search ? `?${search}` : ''}`,
          headers,
        });
        const answer: Record<string, string> = {};
        const res = {
          statusCode: 200,
          setHeader(name: string, value: string | number) {
            answer[name.toLowerCase()] = String(value);
          },
          end(body?: string) {
            gate.leave();
            resolve({ response: { statusCode: res.statusCode, headers: answer, body: Buffer.from(body ?? '', 'utf8') } });
          },
        };
        try {
          listener(req as unknown as IncomingMessage, res as unknown as ServerResponse);
          const body = bodyBytes(request.body);
          if (body.length > 0) req.emit('data', body);
          req.emit('end');
        } catch (err) {
          gate.leave();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      }),
  };
}

/**
 * SigV4 for a store that never checks signatures: the headers the SDK's signer writes
 * (X-Amz-Date, an Authorization with the credential scope and signed headers), without the
 * payload hash and HMAC chain, which cost about a third of an in-process call. dynalite checks
 * the header's form and nothing more, over HTTP as here; the DynamoDB service would refuse it.
 */
const localSigner: RequestSigner = {
  sign: (request, options) => {
    const date = (options?.signingDate ? new Date(options.signingDate) : new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
    const scope = `${date.slice(0, 8)}/${options?.signingRegion ?? 'local'}/${options?.signingService ?? 'dynamodb'}/aws4_request`;
    request.headers['x-amz-date'] = date;
    const signed = Object.keys(request.headers)
      .map((h) => h.toLowerCase())
      .sort()
      .join(';');
    request.headers.authorization = `AWS4-HMAC-SHA256 Credential=local/${scope}, SignedHeaders=${signed}, Signature=${'0'.repeat(64)}`;
    return Promise.resolve(request);
  },
};

function bodyBytes(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error('the in-process DynamoDB transport takes string or byte bodies only');
}

/** Creates the table unless it exists, then waits until it is active. */
export async function ensureTable(endpoint: string, tableName: string, def: TableDefinition = MAIN_TABLE): Promise<void> {
  await ensureTableAs(endpoint, tableInput(tableName, def));
}

/** The CreateTable input of a table of lib/tables.ts, as the stack declares it. */
export function tableInput(tableName: string, def: TableDefinition = MAIN_TABLE): CreateTableCommandInput {
  const attrs = new Set([def.partitionKey, def.sortKey, ...def.indexes.flatMap((i) => [i.partitionKey, i.sortKey])]);
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attrs].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: [
      { AttributeName: def.partitionKey, KeyType: 'HASH' },
      { AttributeName: def.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: def.indexes.map((i) => ({
      IndexName: i.name,
      KeySchema: [
        { AttributeName: i.partitionKey, KeyType: 'HASH' },
        { AttributeName: i.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: i.projection },
    })),
  };
}

/**
 * The table as `input` creates it (from lib/tables.ts for `npm start`, from the template's
 * AWS::DynamoDB::Table for start:synth): created unless it exists, rebuilt when it lacks one of
 * the input's indexes, then waited on until active.
 */
export async function ensureTableAs(endpoint: string, input: CreateTableCommandInput): Promise<void> {
  const client = new DynamoDBClient({ region: 'local', ...localEndpointConfig(endpoint) });
  const tableName = input.TableName ?? '';
  const create = () => client.send(new CreateTableCommand(input));
  try {
    try {
      await create();
    } catch (e) {
      if (!(e instanceof ResourceInUseException)) throw e;
      await rebuildIfIndexMissing(
        client,
        tableName,
        (input.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName ?? ''),
        create,
      );
    }
    await waitActive(client, tableName);
  } finally {
    client.destroy();
  }
}

async function waitActive(client: DynamoDBClient, tableName: string): Promise<void> {
  // dynalite does not implement TTL (UpdateTimeToLive); expiry is checked at read time instead.
  for (let i = 0; i < 100; i++) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') break;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A data dir made before the definition gained an index has a table without it, and dynalite
 * cannot add one in place (UpdateTable ignores index creation). The table is rebuilt: every
 * item read, the table created anew from the definition, the items written back, which fills
 * the new index. Local data only; AWS adds an index in place (CloudFormation).
 */
async function rebuildIfIndexMissing(
  client: DynamoDBClient,
  tableName: string,
  indexes: readonly string[],
  create: () => Promise<unknown>,
): Promise<void> {
  const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const have = new Set((out.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  if (indexes.every((name) => have.has(name))) return;
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start, ConsistentRead: true }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  await client.send(new DeleteTableCommand({ TableName: tableName }));
  for (let i = 0; i < 100; i++) {
    try {
      await create();
      break;
    } catch (e) {
      // dynalite deletes asynchronously even with deleteTableMs 0.
      if (!(e instanceof ResourceInUseException)) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  await waitActive(client, tableName);
  for (const item of items) await client.send(new PutItemCommand({ TableName: tableName, Item: item }));
}
