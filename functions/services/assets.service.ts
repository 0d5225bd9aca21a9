/** Serving an object at its capability link (GET /v1/assets/{token}). */
import { assetHeaders, assetLinkKey, parseRange, verifyAssetToken } from '../core/asset-links';
import { AppError } from '../core/errors';
import { ownerOfKey, type ObjectOwner } from '../core/object-keys';
import type { ObjectStorePort, OpenedObject } from '../core/ports';
import type { Deps } from '../adapters/deps';

/** What the asset route answers: headers, and the bytes as a stream (never held whole when the store can stream). */
export interface AssetAnswer {
  status: 200 | 206;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

const NOT_FOUND_DETAIL = 'no asset at this link: it was never issued, was altered, or what it served was deleted';
const EXPIRED_DETAIL = (at: string) =>
  `this link expired at ${at}; read the result again (GET the execution's result, or the run) for a fresh link: every read mints new links, each with its expires_at`;

/**
 * Checks the link, then that what the object belongs to still exists (a deleted deployment's
 * objects are refused at once, whatever the store still holds), then opens the object. The
 * answer is the same 404 for a made-up, altered, foreign or revoked link.
 */
export async function serveAsset(d: Deps, token: string, rangeHeader: string | undefined, headOnly = false): Promise<AssetAnswer> {
  const now = d.clock.now();
  const { masterKey } = await d.keyMaterial.material();
  const check = verifyAssetToken(token, assetLinkKey(masterKey), now);
  if (!check.ok) {
    if (check.reason === 'expired')
      throw new AppError('AssetLinkExpired', EXPIRED_DETAIL(check.expired_at), { expired_at: check.expired_at });
    throw new AppError('AssetNotFound', NOT_FOUND_DETAIL);
  }
  const { claims } = check;
  const owner = ownerOfKey(claims.key);
  if (!owner || !(await ownerExists(d, owner))) throw new AppError('AssetNotFound', NOT_FOUND_DETAIL);

  if (rangeHeader === undefined && !headOnly) {
    const whole = await openObject(d.objects, claims.key);
    if (!whole) throw new AppError('AssetNotFound', NOT_FOUND_DETAIL);
    return { status: 200, headers: { ...assetHeaders(claims, whole.bytes, now), 'accept-ranges': 'bytes' }, body: whole.body };
  }
  const head = await d.objects.head(claims.key);
  if (!head) throw new AppError('AssetNotFound', NOT_FOUND_DETAIL);
  const range = parseRange(rangeHeader, head.bytes);
  if (range.kind === 'unsatisfiable') {
    throw new AppError(
      'RangeNotSatisfiable',
      `the object is ${head.bytes} bytes`,
      {},
      { headers: { 'content-range': `bytes */${head.bytes}` } },
    );
  }
  // HEAD: what GET would answer, status and headers, from the object's metadata alone.
  let body = none();
  let total = head.bytes;
  if (!headOnly) {
    const opened = range.kind === 'whole' ? await openObject(d.objects, claims.key) : await openObject(d.objects, claims.key, range);
    if (!opened) throw new AppError('AssetNotFound', NOT_FOUND_DETAIL);
    body = opened.body;
    total = opened.bytes;
  }
  if (range.kind === 'whole') return { status: 200, headers: { ...assetHeaders(claims, total, now), 'accept-ranges': 'bytes' }, body };
  return {
    status: 206,
    headers: {
      ...assetHeaders(claims, range.end - range.start + 1, now),
      'accept-ranges': 'bytes',
      'content-range': `bytes ${range.start}-${range.end}/${total}`,
    },
    body,
  };
}

async function* none(): AsyncIterable<Uint8Array> {
  yield* [];
}

async function ownerExists(d: Deps, owner: ObjectOwner): Promise<boolean> {
  if (owner.kind === 'deployment') {
    // Consistent: a link must stop working the moment the delete is acknowledged.
    const dep = await d.deployments.get(owner.deployment_id, true);
    return dep !== null && dep.status === 'live' && dep.deleted_at === null;
  }
  return (await d.pipelines.getMeta(owner.pipeline_id, true)) !== null;
}

/** The store's stream where it has one; else its whole read, sliced (the store holds it in memory anyway). */
async function openObject(objects: ObjectStorePort, key: string, range?: { start: number; end: number }): Promise<OpenedObject | null> {
  if (objects.open) return objects.open(key, range);
  const head = await objects.head(key);
  const bytes = await objects.read(key);
  if (!head || !bytes) return null;
  const slice = range ? bytes.subarray(range.start, range.end + 1) : bytes;
  return { bytes: bytes.length, media_type: head.media_type, body: once(slice) };
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}
