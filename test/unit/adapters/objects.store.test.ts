import { DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { presignedOrigin, s3ClientConfig, S3ObjectStore } from '../../../functions/adapters/objects.store';

const NOW = new Date('2026-11-24T12:00:00.000Z');

describe('S3ObjectStore (the writes)', () => {
  const s3 = mockClient(S3Client);
  beforeEach(() => s3.reset());
  const client = () =>
    new S3Client({ ...s3ClientConfig({ region: 'eu-west-1' }), credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
  const store = () => new S3ObjectStore(client(), 'the-bucket', () => NOW);

  it('puts the bytes with their media type and exact length', async () => {
    s3.on(PutObjectCommand).resolves({});

    await store().put('d/x/e/y/out', Uint8Array.from([1, 2, 3]), 'image/png');

    const input = s3.commandCalls(PutObjectCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ Bucket: 'the-bucket', Key: 'd/x/e/y/out', ContentType: 'image/png', ContentLength: 3 });
  });

  it('removes one key with DeleteObject and many in batches of 1000, each key once', async () => {
    s3.on(DeleteObjectCommand).resolves({});
    s3.on(DeleteObjectsCommand).resolves({});

    await store().remove(['only', 'only']);
    await store().remove(Array.from({ length: 2500 }, (_, i) => `k${i}`));

    expect(s3.commandCalls(DeleteObjectCommand)[0]?.args[0].input).toEqual({ Bucket: 'the-bucket', Key: 'only' });
    expect(s3.commandCalls(DeleteObjectsCommand).map((c) => c.args[0].input.Delete?.Objects?.length)).toEqual([1000, 1000, 500]);
    expect(s3.commandCalls(DeleteObjectsCommand)[0]?.args[0].input.Delete?.Quiet).toBe(true);
  });

  it('fails when DeleteObjects reports keys it could not delete', async () => {
    s3.on(DeleteObjectsCommand).resolves({ Errors: [{ Key: 'k1', Code: 'AccessDenied', Message: 'Access Denied' }] });

    await expect(store().remove(['k1', 'k2'])).rejects.toThrow('could not delete 1 of 2 objects (first: k1: AccessDenied');
  });

  it('removes a prefix page by page and counts what it removed', async () => {
    s3.on(ListObjectsV2Command, { ContinuationToken: undefined }).resolves({
      Contents: [{ Key: 'd/x/1' }, { Key: 'd/x/2' }],
      IsTruncated: true,
      NextContinuationToken: 't1',
    });
    s3.on(ListObjectsV2Command, { ContinuationToken: 't1' }).resolves({ Contents: [{ Key: 'd/x/3' }], IsTruncated: false });
    s3.on(DeleteObjectsCommand).resolves({});

    expect(await store().removePrefix('d/x/')).toBe(3);
    expect(s3.commandCalls(ListObjectsV2Command).map((c) => c.args[0].input.Prefix)).toEqual(['d/x/', 'd/x/']);
    expect(s3.commandCalls(DeleteObjectsCommand).map((c) => c.args[0].input.Delete?.Objects?.map((o) => o.Key))).toEqual([
      ['d/x/1', 'd/x/2'],
      ['d/x/3'],
    ]);
  });

  it('stops a bounded removal at maxKeys, listing no more than it may remove', async () => {
    s3.on(ListObjectsV2Command, { ContinuationToken: undefined }).resolves({
      Contents: [{ Key: 'd/x/1' }, { Key: 'd/x/2' }],
      IsTruncated: true,
      NextContinuationToken: 't1',
    });
    s3.on(DeleteObjectsCommand).resolves({});

    expect(await store().removePrefix('d/x/', { maxKeys: 2 })).toBe(2);
    expect(s3.commandCalls(ListObjectsV2Command).map((c) => c.args[0].input.MaxKeys)).toEqual([2]);
  });

  it('refuses to remove the empty prefix (the whole bucket)', async () => {
    await expect(store().removePrefix('')).rejects.toThrow('non-empty prefix');
    expect(s3.calls()).toHaveLength(0);
  });

  it('presigns a PUT whose Content-Type and Content-Length are signed', async () => {
    const up = await store().presignUpload('d/x/u/y', 'image/png', 1234, 900);
    const url = new URL(up.url);

    expect(up.method).toBe('PUT');
    expect(up.headers).toEqual({ 'Content-Type': 'image/png', 'Content-Length': '1234' });
    expect(up.expires_at).toBe('2026-11-24T12:15:00.000Z');
    expect(url.pathname).toBe('/d/x/u/y');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261124T120000Z');
    // No checksum of an empty body rides along (S3 would refuse the caller's bytes with it).
    expect([...url.searchParams.keys()].filter((k) => k.toLowerCase().includes('checksum'))).toEqual([]);
  });

  it('names the origin its presigned URLs point at, on AWS and at a path-style endpoint', async () => {
    for (const settings of [
      { region: 'eu-west-1' },
      { region: 'us-east-1' },
      { region: 'local', s3Endpoint: 'http://127.0.0.1:4569', s3ForcePathStyle: true },
    ]) {
      const c = new S3Client({ ...s3ClientConfig(settings), credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
      const up = await new S3ObjectStore(c, 'the-bucket', () => NOW).presignUpload('d/x/u/y', 'image/png', 1, 60);
      expect(new URL(up.url).origin).toBe(presignedOrigin(settings, 'the-bucket'));
    }
  });

  it('refuses an impossible upload size', async () => {
    await expect(store().presignUpload('k', 'image/png', -1, 60)).rejects.toThrow('invalid upload size');
  });
});
