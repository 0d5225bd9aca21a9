/**
 * What a CloudFormation custom resource's function receives and how it answers: a PUT of its
 * outcome to the event's pre-signed response URL (CloudFormation waits up to an hour for it).
 */

export interface CustomResourceEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  ResponseURL: string;
  StackId: string;
  RequestId: string;
  LogicalResourceId: string;
  PhysicalResourceId?: string;
  ResourceProperties: Record<string, unknown>;
  /** On an Update: the properties the resource had before. */
  OldResourceProperties?: Record<string, unknown>;
}

export async function respond(
  event: CustomResourceEvent,
  status: 'SUCCESS' | 'FAILED',
  physicalId: string,
  reason?: string,
): Promise<void> {
  const body = JSON.stringify({
    Status: status,
    Reason: reason ?? status,
    PhysicalResourceId: physicalId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  });
  // The response URL is an S3 URL presigned by CloudFormation (Signature Version 2 in the
  // regions that still sign that way), whose signature covers the Content-Type header as sent:
  // it was signed with none. A string body would make fetch add `text/plain;charset=UTF-8`
  // (refused: SignatureDoesNotMatch, and the stack waits an hour for an answer); bytes carry no
  // content type, which SigV2 reads as the empty one it signed and SigV4 (host only) ignores.
  const bytes = Buffer.from(body, 'utf8');
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const res = await fetch(event.ResponseURL, { method: 'PUT', body: bytes, signal: AbortSignal.timeout(5_000) });
      if (res.ok) return;
      last = new Error(`CloudFormation response rejected: ${res.status}`);
      if (res.status < 500) break;
    } catch (err) {
      last = err;
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}
