/**
 * Matching a request path against API resources the way API Gateway REST does: literal
 * segments before parameters, an optional trailing slash, a base path stripped first.
 */
import { createHash } from 'node:crypto';

export type GatewayAuth = 'apiKey' | 'owner' | 'none';

/**
 * One method of the API. lib/routes.ts gives these for `npm start`; the synthesized mode reads
 * them from the template's AWS::ApiGateway::Method resources.
 */
export interface GatewayRoute {
  method: string;
  /** API Gateway style path, parameters in braces. */
  path: string;
  /** Name of the function its proxy integration calls. */
  handler: string;
  auth: GatewayAuth;
  /** This method's integration time-out, where it differs from the gateway's. */
  integrationTimeoutMs?: number;
  /** Takes inline ASSET values (lib/routes.ts `inlineAssets`): its body may reach the inline limit. */
  inlineAssets?: boolean;
  /** The integration streams its answer (lib/routes.ts `streams`; a template's `ResponseTransferMode: STREAM`). */
  streams?: boolean;
}

type Segment = { literal: string } | { param: string };

export interface Resource {
  path: string;
  segments: Segment[];
  methods: Map<string, GatewayRoute>;
  resourceId: string;
}

export interface Match {
  resource: Resource;
  params: Record<string, string>;
}

export function compileRoutes(routes: readonly GatewayRoute[], handlerNames: ReadonlySet<string>): Resource[] {
  const byPath = new Map<string, Resource>();
  for (const route of routes) {
    if (!handlerNames.has(route.handler)) throw new Error(`No handler for route ${route.method} ${route.path} (${route.handler})`);
    const path = trimSlash(route.path);
    let resource = byPath.get(path);
    if (!resource) {
      const segments: Segment[] = path
        .split('/')
        .slice(1)
        .map((s) => {
          const param = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(s)?.[1];
          if (param) return { param };
          if (s.includes('{') || s.includes('}') || s === '') throw new Error(`Unsupported route path ${route.path}`);
          return { literal: s };
        });
      resource = { path, segments, methods: new Map(), resourceId: createHash('sha256').update(path).digest('hex').slice(0, 6) };
      byPath.set(path, resource);
    }
    if (resource.methods.has(route.method)) throw new Error(`Duplicate route ${route.method} ${route.path}`);
    resource.methods.set(route.method, route);
  }
  return [...byPath.values()];
}

/** The matching resource whose first differing segment is a literal wins over a parameter. */
export function matchResource(resources: readonly Resource[], segments: string[]): Match | undefined {
  let best: Match | undefined;
  for (const resource of resources) {
    if (resource.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    resource.segments.forEach((seg, i) => {
      const actual = segments[i] ?? '';
      if ('literal' in seg) matches &&= seg.literal === actual;
      else if (actual === '') matches = false;
      else params[seg.param] = actual;
    });
    if (matches && (!best || moreSpecific(resource, best.resource))) best = { resource, params };
  }
  return best;
}

function moreSpecific(a: Resource, b: Resource): boolean {
  for (let i = 0; i < a.segments.length; i += 1) {
    const x = a.segments[i];
    const y = b.segments[i];
    if (!x || !y) break;
    const xl = 'literal' in x;
    const yl = 'literal' in y;
    if (xl !== yl) return xl;
  }
  return false;
}

export function normaliseBasePath(basePath: string | undefined): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return '';
  const withSlash = basePath.startsWith('/') ? basePath : `/${basePath}`;
  return trimSlash(withSlash);
}

export function stripBasePath(path: string, basePath: string): string | undefined {
  if (basePath === '') return path;
  if (path === basePath) return '/';
  if (path.startsWith(`${basePath}/`)) return path.slice(basePath.length);
  return undefined;
}

export function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
