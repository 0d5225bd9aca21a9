/**
 * The floor every service timing is divided by: a bare Node HTTP server doing the least a
 * request that records something can do — one DynamoDB write and one read, through the same
 * document client the stores use, against dynalite in the same process (as in the local
 * runtime) and stored the same way (on disk or in memory).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, keys } from '../functions/adapters/dynamo';
import { ensureTable, startDynalite } from '../lib/local/dynamo';
import { createLocalServer } from '../lib/local/gateway';

export interface Floor {
  url: string;
  stop(): Promise<void>;
}

const TABLE = 'pipegate-floor';

export async function startFloor(opts: { path?: string } = {}): Promise<Floor> {
  const dynamo = await startDynalite(opts.path ? { path: opts.path } : {});
  await ensureTable(dynamo.endpoint, TABLE);
  const db = createDocumentClient({ region: 'local', endpoint: dynamo.endpoint });

  // The same HTTP server settings as the runtime it is the floor for (keep-alive included).
  const server: Server = createLocalServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = randomUUID();
      const item = {
        ...keys.execution(id),
        execution_id: id,
        status: 'pending',
        body: Buffer.concat(chunks).toString('utf8'),
        created_at: new Date().toISOString(),
      };
      db.send(new PutCommand({ TableName: TABLE, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }))
        .then(() => db.send(new GetCommand({ TableName: TABLE, Key: keys.execution(id) })))
        .then((out) => {
          res.writeHead(202, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ execution_id: id, status: out.Item?.status }));
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: String(err) }));
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      db.destroy();
      await dynamo.close();
    },
  };
}
