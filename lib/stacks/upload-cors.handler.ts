/**
 * CloudFormation custom resource that puts the web form's upload rule (lib/storage-cors.ts) into
 * the objects bucket's CORS configuration, for the API's own origins. It lives in the service
 * stack because that is where the API's execute-api origin is known; the bucket is the stateful
 * stack's. PutBucketCors replaces the whole configuration, so each event reads it first and
 * changes only the rule with the upload rule's ID: Create and Update put it in (replacing an
 * earlier one), Delete takes it out (and deletes the configuration when nothing else is left).
 * Every event can run twice with the same outcome.
 */
import { DeleteBucketCorsCommand, GetBucketCorsCommand, PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3';
import { respond, type CustomResourceEvent } from './cfn-response';
import { fromS3CorsRule, toS3CorsRule, UPLOAD_CORS_RULE_ID, withoutUploadRule, withUploadRule, type BucketCorsRule } from '../storage-cors';

// start:synth gives every function its S3 endpoint; on AWS neither variable is set.
const client = new S3Client({
  ...(process.env.PIPEGATE_S3_ENDPOINT ? { endpoint: process.env.PIPEGATE_S3_ENDPOINT } : {}),
  forcePathStyle: process.env.PIPEGATE_S3_FORCE_PATH_STYLE === 'true',
});

export interface UploadCorsProperties {
  bucket: string;
  origins: string[];
}

/** The resource's properties, checked: a bucket name and at least one origin. */
export function uploadCorsProperties(p: Record<string, unknown> | undefined): UploadCorsProperties {
  const bucket = p?.Bucket;
  const origins = p?.Origins;
  if (typeof bucket !== 'string' || bucket === '') throw new Error('Bucket property missing');
  if (!Array.isArray(origins) || origins.length === 0 || !origins.every((o) => typeof o === 'string' && /^https?:\/\/[^/]+$/.test(o))) {
    throw new Error('Origins must be a list of origins (scheme and host, no path)');
  }
  return { bucket, origins: origins as string[] };
}

const errorName = (err: unknown): string | undefined => (err instanceof Error ? err.name : undefined);

async function rulesOf(s3: S3Client, bucket: string): Promise<BucketCorsRule[]> {
  try {
    const got = await s3.send(new GetBucketCorsCommand({ Bucket: bucket }));
    return (got.CORSRules ?? []).map((r) =>
      fromS3CorsRule({ ...r, AllowedMethods: r.AllowedMethods ?? [], AllowedOrigins: r.AllowedOrigins ?? [] }),
    );
  } catch (err) {
    if (errorName(err) === 'NoSuchCORSConfiguration') return [];
    throw err;
  }
}

async function putRules(s3: S3Client, bucket: string, rules: BucketCorsRule[]): Promise<void> {
  if (rules.length === 0) await s3.send(new DeleteBucketCorsCommand({ Bucket: bucket }));
  else await s3.send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: rules.map(toS3CorsRule) } }));
}

/** Puts the upload rule for `origins` into the bucket's configuration, keeping every other rule. */
export async function putUploadRule(s3: S3Client, p: UploadCorsProperties): Promise<void> {
  await putRules(s3, p.bucket, withUploadRule(await rulesOf(s3, p.bucket), p.origins));
}

/** Takes the upload rule out of the bucket's configuration; a bucket already gone has nothing to take out. */
export async function removeUploadRule(s3: S3Client, bucket: string): Promise<void> {
  try {
    const rules = await rulesOf(s3, bucket);
    const rest = withoutUploadRule(rules);
    if (rest.length !== rules.length) await putRules(s3, bucket, rest);
  } catch (err) {
    if (errorName(err) !== 'NoSuchBucket') throw err;
  }
}

/**
 * Lambda's entry point. Lambda calls it with (event, context): a default for a second
 * parameter would be replaced by the context, so the client is passed on here instead.
 */
export const handler = (event: CustomResourceEvent): Promise<void> => answerUploadCors(event, client);

/** Sets or removes the rule as the event asks, and answers CloudFormation. */
export async function answerUploadCors(event: CustomResourceEvent, s3: S3Client): Promise<void> {
  const bucket = typeof event.ResourceProperties.Bucket === 'string' ? event.ResourceProperties.Bucket : '';
  // Named after the bucket: an Update onto another bucket answers a new id, and CloudFormation
  // then deletes the old resource (the rule on the old bucket) with its old properties.
  const physicalId =
    event.RequestType === 'Delete' && event.PhysicalResourceId ? event.PhysicalResourceId : `${bucket}/${UPLOAD_CORS_RULE_ID}`;
  try {
    if (event.RequestType === 'Delete') {
      // A Create that failed before it named a bucket has nothing to remove.
      if (bucket !== '') await removeUploadRule(s3, bucket);
    } else {
      await putUploadRule(s3, uploadCorsProperties(event.ResourceProperties));
    }
    await respond(event, 'SUCCESS', physicalId);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(
      JSON.stringify({ level: 'error', message: 'upload CORS rule not set', request_type: event.RequestType, error_message: message }),
    );
    await respond(event, 'FAILED', physicalId, message);
  }
}
