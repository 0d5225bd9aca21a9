/**
 * The objects bucket's CORS rule: what lets a web form's page PUT a file straight to storage
 * through a presigned URL. One rule, from one origin: the stateful stack gives it to the bucket
 * (when the API's public URL is known at synth), the local runtime's S3 emulation applies it for
 * its own origin, and start:synth reads it back from the synthesized template.
 */

/** A bucket CORS rule, in S3's terms (CorsRule); CDK's and CloudFormation's forms are mapped from it. */
export interface BucketCorsRule {
  allowedMethods: readonly string[];
  /** Exact origins, or with one `*` wildcard as S3 allows. */
  allowedOrigins: readonly string[];
  allowedHeaders: readonly string[];
  exposedHeaders: readonly string[];
  maxAgeSeconds: number;
}

/**
 * The headers a presigned upload signs that a browser sends itself (functions/adapters/objects.store.ts
 * signs Content-Type and Content-Length; Content-Length is set by the browser and never asked for
 * in a preflight, so Content-Type is the only one to allow).
 */
export const UPLOAD_SIGNED_HEADERS = ['content-type'] as const;

/** How long a browser may keep a preflight's answer: one per file would double the requests. */
export const UPLOAD_CORS_MAX_AGE_SECONDS = 3000;

/** PUT from `origin` only, with the signed headers; the ETag readable, as S3 answers it. */
export function uploadCorsRule(origin: string): BucketCorsRule {
  return {
    allowedMethods: ['PUT'],
    allowedOrigins: [origin],
    allowedHeaders: [...UPLOAD_SIGNED_HEADERS],
    exposedHeaders: ['ETag'],
    maxAgeSeconds: UPLOAD_CORS_MAX_AGE_SECONDS,
  };
}

/** The origin of a base URL (scheme, host, port): what a browser sends in `Origin`. */
export const originOf = (url: string): string => new URL(url).origin;
