/**
 * ASSET inputs through the caller services on a real store (dynalite) with in-memory object
 * storage: inline values stored under the execution, uploads made, used once, refused when
 * foreign, expired, missing, resized or of the wrong type; records hold references, not bytes.
 */
import { randomUUID } from 'node:crypto';
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOAD_USE_SECONDS } from '../../functions/core/assets';
import { AppError } from '../../functions/core/errors';
import type { CallerAuth } from '../../functions/core/consumers';
import { createUpload } from '../../functions/services/uploads.service';
import { startAssetWorld, type AssetWorld } from '../support/asset-world';
import { assetValue as asset, dataUri, jpeg, mp4, png } from '../support/media';
import { rejection } from '../support/thrown';

let w: AssetWorld;

beforeAll(async () => {
  w = await startAssetWorld('2026-11-24T12:00:00Z');
});
afterAll(async () => {
  await w.close();
});

const aDeployment = () =>
  w.aDeployment([
    {
      id: 'photo',
      value_type: 'asset',
      value: dataUri('image/png', png(1, 1)),
      visible: true,
      media_types: ['image/png', 'image/jpeg'],
      max_bytes: 200_000,
    },
    { id: 'clip', value_type: 'asset', value: dataUri('video/mp4', mp4()), visible: true, media_types: ['video/*'] },
    { id: 'caption', value_type: 'string', value: 'hi', visible: true },
  ]);
const refusal = (p: Promise<unknown>): Promise<AppError> => rejection(p, AppError);

describe('inline ASSET values', () => {
  it('stores the bytes under the execution and records a reference with the sniffed type, size and hash', async () => {
    // Prepare
    const { auth } = await aDeployment();
    const photo = jpeg();

    // Act: a JPEG sent as a data URI that claims to be a PNG.
    const r = await w.submit(auth, { photo: asset(dataUri('image/png', photo)) });

    // Assess
    const e = await w.db.executions.get(r.body.execution_id, w.now(), true);
    const ref = e?.assets?.photo;
    expect(ref).toEqual({
      key: `d/${auth.deploymentId}/e/${r.body.execution_id}/in.photo`,
      media_type: 'image/jpeg',
      bytes: photo.length,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(Buffer.from((await w.objects.read(ref?.key ?? '')) ?? []).equals(photo)).toBe(true);
    // The default of the input not sent is stored too.
    expect(e?.assets?.clip).toMatchObject({ media_type: 'video/mp4', bytes: mp4().length });
    expect(e?.inputs).toEqual({ caption: 'hi' });
    expect(JSON.stringify(e)).not.toContain(photo.toString('base64'));
  });

  it('refuses bytes of a type the input does not accept, naming it and what it accepts, and writes nothing', async () => {
    // Prepare
    const { auth } = await aDeployment();
    const putsBefore = w.objects.puts;

    // Act
    const e = await refusal(w.submit(auth, { photo: asset(mp4().toString('base64')) }));

    // Assess
    expect(e.status).toBe(422);
    expect(e.detail).toBe("input 'photo' is video/mp4 (sniffed from its bytes) but accepts image/png or image/jpeg, at most 200000 bytes");
    expect(w.objects.puts).toBe(putsBefore);
  });

  it('takes a value near the inline limit', async () => {
    const { auth } = await aDeployment();
    const big = Buffer.concat([mp4(), Buffer.alloc(INLINE_ASSET_BODY_MAX_BYTES * 0.7)]);
    const r = await w.submit(auth, { clip: asset(big.toString('base64')) });
    expect(r.status).toBe(202);
  });
});

describe('uploads', () => {
  it('answers 201 with a PUT of exactly the size, and the asset to send; the upload then serves one execution', async () => {
    // Prepare
    const { auth } = await aDeployment();
    const photo = png(20, 20);

    // Act
    const up = await w.upload(auth, photo.length);
    const put = w.objects.completeUpload(up.upload_url, photo);
    const first = await w.submit(auth, { photo: up.asset });
    const again = await refusal(w.submit(auth, { photo: up.asset }));

    // Assess
    expect(up).toEqual(w.uploadAnswer(photo.length));
    expect(put).toBe('ok');
    const e = await w.db.executions.get(first.body.execution_id, w.now(), true);
    expect(e?.assets?.photo).toMatchObject({
      key: `d/${auth.deploymentId}/u/${up.asset.value.slice(7)}`,
      media_type: 'image/png',
      bytes: photo.length,
    });
    expect(again.status).toBe(422);
    expect(again.detail).toMatch(/^input 'photo' names an upload that another execution has used already/);
  });

  it('lets a retry with the same Idempotency-Key through (the same execution)', async () => {
    const { auth } = await aDeployment();
    const photo = png(3, 3);
    const up = await w.upload(auth, photo.length);
    w.objects.completeUpload(up.upload_url, photo);
    const a = await w.submit(auth, { photo: up.asset }, 'k-1');
    const b = await w.submit(auth, { photo: up.asset }, 'k-1');
    expect(b.body.execution_id).toBe(a.body.execution_id);
  });

  it.each([
    ['no bytes yet', async () => undefined, /whose bytes have not arrived/],
    [
      'another deployment',
      async (u: { auth: CallerAuth; value: string }) => {
        const other = await aDeployment();
        return { refused: refusal(w.submit(other.auth, { photo: asset(u.value) })) };
      },
      /does not exist or has expired/,
    ],
    [
      'expired',
      async (u: { auth: CallerAuth; value: string; put: () => void }) => {
        u.put();
        w.advance(UPLOAD_USE_SECONDS + 1);
        return undefined;
      },
      /does not exist or has expired/,
    ],
  ])('refuses an upload with %s', async (_name, act, detail) => {
    // Prepare
    const { auth } = await aDeployment();
    const photo = png(4, 4);
    const up = await w.upload(auth, photo.length);
    const ctx = { auth, value: up.asset.value, put: () => w.objects.completeUpload(up.upload_url, photo) };

    // Act
    const own = await act(ctx);
    const e = await (own?.refused ?? refusal(w.submit(auth, { photo: up.asset })));

    // Assess
    expect(e.status).toBe(422);
    expect(String(e.detail)).toMatch(detail);
  });

  it('refuses an upload whose bytes are not what the input accepts, sniffed whatever the upload said', async () => {
    const { auth } = await aDeployment();
    const clip = mp4();
    const up = await w.upload(auth, clip.length);
    w.objects.completeUpload(up.upload_url, clip);
    const e = await refusal(w.submit(auth, { photo: up.asset }));
    expect(e.detail).toMatch(/^input 'photo' is video\/mp4 \(sniffed from its bytes\)/);
  });

  it('refuses a PUT of another size (as S3 does with the signed Content-Length)', async () => {
    const { auth } = await aDeployment();
    const up = await w.upload(auth, 100);
    expect(w.objects.completeUpload(up.upload_url, Buffer.alloc(101))).toBe('wrong_size');
    expect(w.objects.completeUpload(up.upload_url, Buffer.alloc(99))).toBe('wrong_size');
  });

  it.each([
    ['no body', null, 400, /body is required/],
    ['an unknown field', JSON.stringify({ media_type: 'image/png', bytes: 5, name: 'x' }), 400, /name is not a known field/],
    ['a size of 0', JSON.stringify({ media_type: 'image/png', bytes: 0 }), 400, /bytes must be at least 1/],
    [
      'a size over the largest upload',
      JSON.stringify({ media_type: 'image/png', bytes: 100 * 1024 * 1024 + 1 }),
      400,
      /bytes must be at most 104857600/,
    ],
    [
      'a type no input takes',
      JSON.stringify({ media_type: 'text/plain', bytes: 5 }),
      422,
      /no asset input takes 5 bytes of text\/plain: 'photo' accepts image\/png or image\/jpeg, at most 200000 bytes; 'clip' accepts video\/\*/,
    ],
    [
      'a size no input takes',
      JSON.stringify({ media_type: 'image/png', bytes: 200_001 }),
      422,
      /no asset input takes 200001 bytes of image\/png/,
    ],
  ])('refuses an upload request with %s', async (_name, body, status, detail) => {
    const { auth } = await aDeployment();
    const e = await refusal(createUpload(w.d, auth, auth.deploymentId, body));
    expect(e.status).toBe(status);
    expect(String(e.detail)).toMatch(detail);
  });

  it('answers 401 other_deployment for another deployment than the key’s', async () => {
    const { auth } = await aDeployment();
    const e = await refusal(createUpload(w.d, auth, randomUUID(), JSON.stringify({ media_type: 'image/png', bytes: 5 })));
    expect(e.status).toBe(401);
    expect(String(e.detail)).toMatch(/another deployment/);
  });
});
