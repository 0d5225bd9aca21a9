/**
 * The objects bucket's CORS rule: what lets a web form's page PUT a file straight to storage
 * through a presigned URL. One rule, for the API's own origins only: on AWS the service stack's
 * upload-cors custom resource (lib/stacks/upload-cors.handler.ts) merges it into the bucket's
 * configuration (the execute-api origin, and the public URL's when there is one), start:synth
 * runs that same resource against its S3 emulation, and `npm start` applies it for its own origin.
 */

/** A bucket CORS rule, in S3's terms (CorsRule); CDK's and CloudFormation's forms are mapped from it. */
export interface BucketCorsRule {
  /** S3's optional rule ID: how the upload rule is told apart from rules set by anyone else. */
  id?: string;
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

/** The upload rule's ID in the bucket's CORS configuration. */
export const UPLOAD_CORS_RULE_ID = 'pipegate-form-uploads';

/** PUT from the given origins only, with the signed headers; the ETag readable, as S3 answers it. */
export function uploadCorsRule(...origins: string[]): BucketCorsRule {
  return {
    id: UPLOAD_CORS_RULE_ID,
    allowedMethods: ['PUT'],
    allowedOrigins: [...new Set(origins)],
    allowedHeaders: [...UPLOAD_SIGNED_HEADERS],
    exposedHeaders: ['ETag'],
    maxAgeSeconds: UPLOAD_CORS_MAX_AGE_SECONDS,
  };
}

/** The origin of a base URL (scheme, host, port): what a browser sends in `Origin`. */
export const originOf = (url: string): string => new URL(url).origin;

/**
 * A bucket's rules with the upload rule put in (replacing an earlier upload rule, keeping every
 * other rule as it was): PutBucketCors replaces the whole configuration, so what others set is
 * carried over, and running it twice gives the same configuration.
 */
export const withUploadRule = (rules: readonly BucketCorsRule[], origins: readonly string[]): BucketCorsRule[] => [
  ...withoutUploadRule(rules),
  uploadCorsRule(...origins),
];

/** A bucket's rules without the upload rule (what removing the custom resource leaves). */
export const withoutUploadRule = (rules: readonly BucketCorsRule[]): BucketCorsRule[] => rules.filter((r) => r.id !== UPLOAD_CORS_RULE_ID);

/** S3's API shape of a rule (CORSRule), as PutBucketCors takes and GetBucketCors gives it. */
export interface S3CorsRule {
  ID?: string;
  AllowedMethods: string[];
  AllowedOrigins: string[];
  AllowedHeaders?: string[];
  ExposeHeaders?: string[];
  MaxAgeSeconds?: number;
}

export const toS3CorsRule = (r: BucketCorsRule): S3CorsRule => ({
  ...(r.id !== undefined ? { ID: r.id } : {}),
  AllowedMethods: [...r.allowedMethods],
  AllowedOrigins: [...r.allowedOrigins],
  ...(r.allowedHeaders.length > 0 ? { AllowedHeaders: [...r.allowedHeaders] } : {}),
  ...(r.exposedHeaders.length > 0 ? { ExposeHeaders: [...r.exposedHeaders] } : {}),
  MaxAgeSeconds: r.maxAgeSeconds,
});

export const fromS3CorsRule = (r: S3CorsRule): BucketCorsRule => ({
  ...(r.ID !== undefined ? { id: r.ID } : {}),
  allowedMethods: r.AllowedMethods,
  allowedOrigins: r.AllowedOrigins,
  allowedHeaders: r.AllowedHeaders ?? [],
  exposedHeaders: r.ExposeHeaders ?? [],
  maxAgeSeconds: r.MaxAgeSeconds ?? 0,
});
