/** A deployment's web-form link: derived from its salt (never stored), made, and rotated. */
import { randomBytes } from 'node:crypto';
import { FORM_SALT_BYTES, formToken, formTokenHash, formUrl } from '../core/form-link';
import { AppError } from '../core/errors';
import type { DeploymentRecord, FormSettings } from '../core/types';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';

/** The form's link as the owner is shown it: derived again from its salt (never stored); null unless enabled. */
export async function formLinkOf(d: Deps, r: Pick<DeploymentRecord, 'form'>, baseUrl: string): Promise<string | null> {
  if (!r.form?.enabled) return null;
  const { masterKey } = await d.keyMaterial.material();
  return formUrl(baseUrl, formToken(r.form.salt, masterKey));
}

/** A new form link: its lookup item first, so the link works the moment the deployment names it. */
export async function newFormLink(d: Deps, deploymentId: string): Promise<Pick<FormSettings, 'salt' | 'token_hash'>> {
  const { pepper, masterKey } = await d.keyMaterial.material();
  const salt = randomBytes(FORM_SALT_BYTES).toString('base64url');
  const token_hash = formTokenHash(formToken(salt, masterKey), pepper);
  await d.forms.putLink(token_hash, deploymentId);
  return { salt, token_hash };
}

/** A new form link; the old one answers 404 from the deployment's write on (no grace period: a link is shared, not configured). */
export async function rotateFormLink(d: Deps, dep: DeploymentRecord, baseUrl: string): Promise<string> {
  const before = dep.form;
  if (!before) {
    throw new AppError('InvalidRequest', [
      { path: 'credential', reason: 'this deployment has no web form: publish with {"form": {"enabled": true}} first' },
    ]);
  }
  const link = await newFormLink(d, dep.deployment_id);
  const updated = await d.deployments.setForm(dep.deployment_id, dep.revision, { ...before, ...link });
  if (!updated) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
  await d.forms.removeLink(before.token_hash).catch((err: unknown) => d.log.warn('old form link lookup not removed', errorFields(err)));
  const { masterKey } = await d.keyMaterial.material();
  return formUrl(baseUrl, formToken(link.salt, masterKey));
}
