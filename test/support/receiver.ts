/** A callback receiver for the suites: it records every delivery and can answer 500 at a chosen rate. */
import { reply, startTestServer } from './http-server';

export interface Hook {
  webhookId: string;
  executionId: string;
  status: string;
  answered: number;
  body: string;
}

export interface Receiver {
  url: string;
  /** Every POST received, including those answered with an error. */
  hooks: Hook[];
  /** Share of requests answered 500 (0..1). */
  failRate: number;
  delivered(): Hook[];
  close(): Promise<void>;
}

export async function startReceiver(failRate = 0, random: () => number = Math.random): Promise<Receiver> {
  const hooks: Hook[] = [];
  const server = await startTestServer((req, res) => {
    const status = random() < r.failRate ? 500 : 204;
    let executionId = '';
    try {
      executionId = String((JSON.parse(req.body) as { execution_id?: unknown }).execution_id ?? '');
    } catch {
      executionId = '';
    }
    hooks.push({
      webhookId: String(req.headers['webhook-id'] ?? ''),
      executionId,
      status: String(req.headers['x-pipegate-status'] ?? ''),
      answered: status,
      body: req.body,
    });
    reply(res, status);
  });
  const r: Receiver = {
    url: `${server.origin}/hook`,
    hooks,
    failRate,
    delivered: () => hooks.filter((h) => h.answered < 300),
    close: () => server.close(),
  };
  return r;
}

/** Per execution: the distinct webhook ids it was POSTed under, and how many deliveries succeeded. */
export function hooksByExecution(hooks: Hook[]): Map<string, { ids: Set<string>; delivered: number; statuses: Set<string> }> {
  const out = new Map<string, { ids: Set<string>; delivered: number; statuses: Set<string> }>();
  for (const h of hooks) {
    const entry = out.get(h.executionId) ?? { ids: new Set(), delivered: 0, statuses: new Set() };
    entry.ids.add(h.webhookId);
    entry.statuses.add(h.status);
    if (h.answered < 300) entry.delivered += 1;
    out.set(h.executionId, entry);
  }
  return out;
}
