import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway, type ProxyHandler } from '/work/wt-deploy/lib/local/gateway';
import { ROUTES, routeHandlers } from '/work/wt-deploy/lib/routes';
process.on('uncaughtException', (e) => console.log('UNCAUGHT', e.message, (e as any).stack?.split('\n').slice(0,6).join(' | ')));
const handlers: Record<string, ProxyHandler> = {};
for (const name of routeHandlers()) handlers[name] = async () => ({ statusCode: 200, body: '{}' });
const server = createServer(createGateway({ routes: ROUTES, handlers, authorizer: async () => { throw new Error('Unauthorized'); }, ownerToken: 'pgo_x', maxBodyBytes: 256 * 1024 }));
server.listen(0, '127.0.0.1', async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/deployments/d-1/executions`;
  const body = Buffer.alloc(Number(process.env.N), 0x61);
  const out: string[] = [];
  for (let i = 0; i < 20; i++) {
    out.push(await new Promise<string>((resolve) => {
      const req = request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-API-Key': 'k', 'Content-Length': String(body.length) } }, (res) => {
        let t = ''; res.on('data', (c) => (t += c)); res.on('end', () => resolve(String(res.statusCode))); res.on('error', (e) => resolve('reserr ' + e.message));
      });
      req.on('error', (e) => resolve('err ' + e.message));
      req.end(body);
    }));
  }
  console.log(out.join(' '));
  server.closeAllConnections(); server.close();
});
