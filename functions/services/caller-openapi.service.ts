/**
 * A deployment's own OpenAPI document, apart from the other caller use cases so that the
 * document builder (and the schema converter it carries) stays out of the execute, status,
 * result and cancel bundles.
 */
import { withCodeSamples } from '../core/docs-page';
import { deploymentOpenApi } from '../core/openapi';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { DEPLOYMENT_ROUTES } from '../../lib/routes';
import { assertDeployment, liveDeployment } from './caller.service';

export async function openApi(d: Deps, auth: CallerAuth, deploymentId: string, baseUrl: string) {
  assertDeployment(auth, deploymentId);
  return withCodeSamples(deploymentOpenApi(await liveDeployment(d, auth), baseUrl, DEPLOYMENT_ROUTES), deploymentId);
}
