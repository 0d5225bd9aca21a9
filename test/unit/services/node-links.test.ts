/**
 * The links nodes are handed for files (tasks.service.ts nodeLink): this service's own asset
 * route, signed for the run's time-out plus the margin, pointing at the public URL, else the
 * execution's base, else the API's own; a presigned URL only for a record with none of them.
 */
import { assetLinkKey, NODE_LINK_MARGIN_SECONDS, nodeLinkTtlSeconds, verifyAssetToken } from '../../../functions/core/asset-links';
import { HmacAssetLinks } from '../../../functions/adapters/asset-links';
import type { Deps } from '../../../functions/adapters/deps';
import type { ObjectRef, PresignedDownload } from '../../../functions/core/ports';
import { isOwnApiUrl } from '../../../functions/core/address-guard';
import { nodeLink, ownApiUrls } from '../../../functions/services/tasks.service';

const MASTER = Buffer.alloc(32, 5);
const NOW = new Date('2026-11-25T02:00:00Z');
const ref: ObjectRef = { key: 'd/dep/e/exec/in.photo', media_type: 'image/svg+xml', bytes: 10, sha256: 'a'.repeat(64) };

function deps(config: { publicUrl?: string; apiUrl?: string; executionTimeoutMs?: number } = {}) {
  const presigned: string[] = [];
  const d = {
    config: {
      executionTimeoutMs: 900_000,
      publicUrl: config.publicUrl,
      apiUrl: config.apiUrl,
      ...(config.executionTimeoutMs === undefined ? {} : { executionTimeoutMs: config.executionTimeoutMs }),
    },
    clock: { now: () => NOW },
    // The configured caller link lifetime (1 h by default) must not be what a node gets.
    assetLinks: new HmacAssetLinks({ material: async () => ({ pepper: Buffer.alloc(32), masterKey: MASTER }) }, 60),
    objects: {
      presignDownload: async (key: string, _m: string, ttl: number): Promise<PresignedDownload> => (
        presigned.push(key),
        { url: `http://s3.test/${key}`, expires_at: new Date(NOW.getTime() + ttl * 1000).toISOString() }
      ),
    },
  } as unknown as Deps;
  return { d, presigned };
}

const tokenOf = (url: string) => url.split('/v1/assets/')[1] ?? '';

describe('links minted for nodes', () => {
  it("are asset-route links that expire with the run's time-out plus the margin, binding the object and its safe disposition", async () => {
    const { d, presigned } = deps({ executionTimeoutMs: 900_500 });
    const link = await nodeLink(d, { base_url: 'https://abc.execute-api.test/prod' }, ref);

    expect(link.url.startsWith('https://abc.execute-api.test/prod/v1/assets/v1.')).toBe(true);
    const exp = NOW.getTime() / 1000 + 901 + NODE_LINK_MARGIN_SECONDS;
    expect(link.expires_at).toBe(new Date(exp * 1000).toISOString());
    expect(verifyAssetToken(tokenOf(link.url), assetLinkKey(MASTER), NOW)).toEqual({
      ok: true,
      claims: { key: ref.key, media_type: ref.media_type, attachment: true, exp },
    });
    expect(presigned).toEqual([]);
  });

  it('still work when the run ends at its time-out, and stop after the margin', async () => {
    const { d } = deps();
    const link = await nodeLink(d, { base_url: 'http://127.0.0.1:3000' }, ref);
    const at = (s: number) => new Date(NOW.getTime() + s * 1000);
    expect(verifyAssetToken(tokenOf(link.url), assetLinkKey(MASTER), at(nodeLinkTtlSeconds(900_000) - 1)).ok).toBe(true);
    expect(verifyAssetToken(tokenOf(link.url), assetLinkKey(MASTER), at(nodeLinkTtlSeconds(900_000)))).toMatchObject({
      ok: false,
      reason: 'expired',
    });
  });

  it('point at the public URL first, then the base the execution was submitted at, then the API', async () => {
    expect(
      (await nodeLink(deps({ publicUrl: 'https://api.example.test', apiUrl: 'https://x.test' }).d, { base_url: 'https://y.test' }, ref))
        .url,
    ).toMatch(/^https:\/\/api\.example\.test\/v1\/assets\//);
    expect((await nodeLink(deps({ apiUrl: 'https://x.test' }).d, { base_url: 'https://y.test' }, ref)).url).toMatch(
      /^https:\/\/y\.test\/v1\/assets\//,
    );
    expect((await nodeLink(deps({ apiUrl: 'https://x.test' }).d, {}, ref)).url).toMatch(/^https:\/\/x\.test\/v1\/assets\//);
  });

  it('fall back to a presigned URL for a record that names no base, where no base is configured', async () => {
    const { d, presigned } = deps();
    const link = await nodeLink(d, { base_url: null }, ref);
    expect(link.url).toBe(`http://s3.test/${ref.key}`);
    expect(presigned).toEqual([ref.key]);
  });

  it("are for outside services: the loop guard refuses them to the run's own http nodes, which send files with body_asset instead", async () => {
    const config = { apiUrl: 'https://abc.execute-api.test/prod', publicUrl: 'https://api.example.test' };
    for (const base of [config.apiUrl, undefined]) {
      const link = await nodeLink(deps(base === undefined ? config : { apiUrl: config.apiUrl }).d, { base_url: base ?? null }, ref);
      expect(isOwnApiUrl(link.url, ownApiUrls(config))).toBe(true);
    }
  });
});
