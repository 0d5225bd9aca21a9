/**
 * The execute path alone: POST …/executions answered 202 (authorizer, execute handler, one
 * store write, one queue send), with the runner's queue consumer paused so nothing behind the
 * queue competes for the same core.
 */
import type { ServerChild } from './child';
import { requestLoad, type ShapeFigures, type Shapes } from './e2e';
import type { Call } from './load';

export async function executePath(child: ServerChild, url: string, call: Call, shapes: Shapes): Promise<ShapeFigures> {
  // Executions accepted here stay queued: run this last, then stop the runtime.
  await child.command('pause');
  return requestLoad(child, url, call, 202, shapes, 'execute path');
}
