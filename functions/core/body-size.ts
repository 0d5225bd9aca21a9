/**
 * The request body limit (contract §4 and §5), decided here for every place that reads a body:
 * the handlers' edge (adapters/api.ts), the execute parser (execution-request.ts), the local
 * gateway (lib/local/gateway) and the web ACL's 413 (lib/stacks/service-stack.ts). They give
 * the limits (PIPEGATE_MAX_BODY_BYTES from lib/config.ts, `inlineAssets` from lib/routes.ts)
 * and the body's size; this says whether it is too large and what the 413 says.
 */
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOADS_ROUTE } from './assets';
import { AppError } from './errors';

export interface BodyLimits {
  /** Every route's limit (PIPEGATE_MAX_BODY_BYTES), in UTF-8 bytes. */
  maxBodyBytes: number;
  /**
   * The route takes inline ASSET values (lib/routes.ts `inlineAssets`): its body may grow up to
   * INLINE_ASSET_BODY_MAX_BYTES, but only those values may take the room past `maxBodyBytes`.
   */
  inlineAssets?: boolean;
}

/** The 413 detail: the limit, in bytes and in a unit a person reads. */
export function bodyLimitDetail(maxBytes: number): string {
  const unit = maxBytes % 1_048_576 === 0 ? `${maxBytes / 1_048_576} MiB` : maxBytes % 1024 === 0 ? `${maxBytes / 1024} KiB` : null;
  return `the request body must be at most ${maxBytes} bytes${unit ? ` (${unit})` : ''}`;
}

/** The 413 detail for an execution request too large even for inline assets. */
export function inlineLimitDetail(): string {
  return `${bodyLimitDetail(INLINE_ASSET_BODY_MAX_BYTES)} when it carries inline ASSET values; send larger files with ${UPLOADS_ROUTE} and put the asset it answers in workflow_input`;
}

/** The most bytes the route's body may have at all: a reader may stop reading past it. */
export function bodyCeiling(limits: BodyLimits): number {
  return limits.inlineAssets ? Math.max(limits.maxBodyBytes, INLINE_ASSET_BODY_MAX_BYTES) : limits.maxBodyBytes;
}

/**
 * The 413's detail for a body of `size` bytes, or null when it is within its limit.
 * `assetBytes` is how many of those bytes are inline ASSET values: 0 for a body that is not
 * JSON; left out while the body is not parsed yet, when only the ceiling can be decided.
 */
export function bodySizeProblem(size: number, limits: BodyLimits, assetBytes?: number): string | null {
  const ceiling = bodyCeiling(limits);
  // Past the ceiling the route's largest limit is the one to name.
  if (size > ceiling) return ceiling > limits.maxBodyBytes ? inlineLimitDetail() : bodyLimitDetail(limits.maxBodyBytes);
  if (size <= limits.maxBodyBytes || assetBytes === undefined) return null;
  return size - assetBytes > limits.maxBodyBytes ? bodyLimitDetail(limits.maxBodyBytes) : null;
}

/** 413 PayloadTooLarge when `bodySizeProblem` finds one. */
export function assertBodySize(size: number, limits: BodyLimits, assetBytes?: number): void {
  const problem = bodySizeProblem(size, limits, assetBytes);
  if (problem !== null) throw new AppError('PayloadTooLarge', problem);
}

/**
 * What a body above every route's ceiling is told where the route is not known (the web ACL
 * in front of the API): each kind of route's answer, the usual one first.
 */
export function beyondEveryLimitDetail(maxBodyBytes: number): string {
  const beyond = Number.POSITIVE_INFINITY;
  const answers = [false, true].map((inlineAssets) => bodySizeProblem(beyond, { maxBodyBytes, inlineAssets }));
  return [...new Set(answers)].join('; ');
}
