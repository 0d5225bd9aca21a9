/**
 * Each route handler of the table (lib/routes.ts), loaded by its folder as the stack bundles
 * it (functions/<name>/handler.ts exporting `createHandler`), so a route needs no line here.
 * The runtime loads them all as it starts: a folder that is missing, or a handler.ts without
 * `createHandler`, stops `npm start` naming it, rather than answering that route 5XX later.
 */
// First: a streamed route's handler calls `awslambda.streamifyResponse` as its module loads.
import './gateway/awslambda-shim';
import { join } from 'node:path';
import type { DepsSource } from '../../functions/adapters/deps';
import { routeHandlers, type HandlerName } from '../routes';
import type { LocalFunction } from './gateway/streaming';

export type HttpLambda = LocalFunction;
/** What every handler.ts exports as `createHandler` (functions/adapters/api.ts builds it). */
export type HandlerFactory = (deps: DepsSource) => HttpLambda;

const FUNCTIONS_DIR = join(__dirname, '..', '..', 'functions');

export function loadHandler(name: HandlerName): HandlerFactory {
  const file = join(FUNCTIONS_DIR, name, 'handler');
  let mod: { createHandler?: unknown };
  try {
    // By name, as start:synth loads each bundle: the table is the list (tsx and jest compile it).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a path known only at run time
    mod = require(file) as { createHandler?: unknown };
  } catch (e) {
    const missing = (e as { code?: string }).code === 'MODULE_NOT_FOUND' && String((e as Error).message).includes(file);
    if (missing) throw new Error(`lib/routes.ts names handler "${name}", but there is no functions/${name}/handler.ts`, { cause: e });
    throw e;
  }
  if (typeof mod.createHandler !== 'function') {
    throw new Error(`functions/${name}/handler.ts exports no createHandler (httpHandler, streamedHttpHandler or streamedJsonHandler)`);
  }
  return mod.createHandler as HandlerFactory;
}

/** Every route handler's factory, by name. */
export const loadHandlers = (): Record<HandlerName, HandlerFactory> =>
  Object.fromEntries(routeHandlers().map((name) => [name, loadHandler(name)])) as Record<HandlerName, HandlerFactory>;
