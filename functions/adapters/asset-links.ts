import { assetLinkKey, servedAsAttachment, signAssetToken } from '../core/asset-links';
import type { AssetLinksPort, KeyMaterialPort, ObjectRef, PresignedDownload } from '../core/ports';

/** The path of the asset route (lib/routes.ts), token appended. */
export const ASSET_ROUTE_PREFIX = '/v1/assets/';

/**
 * Mints capability links served by this service's own asset route (GET /v1/assets/{token}),
 * signed with a key derived from the service's key material. Nothing is stored: the link is
 * its own proof, checked again on every request (functions/services/assets.service.ts).
 */
export class HmacAssetLinks implements AssetLinksPort {
  constructor(
    private readonly keyMaterial: KeyMaterialPort,
    private readonly ttlSeconds: number,
  ) {}

  async link(ref: ObjectRef, baseUrl: string, now: Date, ttlSeconds = this.ttlSeconds, fileName?: string): Promise<PresignedDownload> {
    const { masterKey } = await this.keyMaterial.material();
    const exp = Math.floor(now.getTime() / 1000) + ttlSeconds;
    const token = signAssetToken(
      {
        key: ref.key,
        media_type: ref.media_type,
        attachment: servedAsAttachment(ref.media_type),
        exp,
        ...(fileName === undefined ? {} : { name: fileName }),
      },
      assetLinkKey(masterKey),
    );
    return { url: `${baseUrl.replace(/\/+$/, '')}${ASSET_ROUTE_PREFIX}${token}`, expires_at: new Date(exp * 1000).toISOString() };
  }
}
