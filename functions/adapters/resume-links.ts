import { resumeKey, resumeUrlOf, signResumeToken, verifyResumeToken } from '../core/resume-token';
import type { KeyMaterialPort, ResumeLinksPort } from '../core/ports';

/**
 * Wait nodes' resume URLs, signed with a key derived from the service's key material
 * (functions/core/resume-token.ts). Nothing is stored: a URL is derived again wherever it is
 * shown, and checked again whenever it is used.
 */
export class HmacResumeLinks implements ResumeLinksPort {
  constructor(private readonly keyMaterial: KeyMaterialPort) {}

  private async key(): Promise<Buffer> {
    return resumeKey((await this.keyMaterial.material()).masterKey);
  }

  async url(baseUrl: string, executionId: string, nodeId: string): Promise<string> {
    return resumeUrlOf(baseUrl, signResumeToken({ execution_id: executionId, node_id: nodeId }, await this.key()));
  }

  async check(token: string) {
    return verifyResumeToken(token, await this.key());
  }
}
