/** The owner's secrets: set, list and delete (never read back). */
import * as v from 'valibot';
import { AppError } from '../core/errors';
import { ownerRequestBody as parseJson } from '../core/json-body';
import { OWNER_SECRET_NAME_PATTERN } from '../core/owner-secrets';
import { SecretValue } from '../core/shapes';
import type { Deps } from '../adapters/deps';

const NAME_RULE = 'must start with a letter or an underscore and hold only letters, digits and underscores (at most 64)';

function checkName(name: string): void {
  if (!OWNER_SECRET_NAME_PATTERN.test(name)) throw new AppError('InvalidRequest', [{ path: 'name', reason: NAME_RULE }]);
}

export async function putSecret(d: Deps, name: string, body: string | null) {
  checkName(name);
  const raw = parseJson(body);
  const parsed = v.safeParse(SecretValue, raw);
  if (!parsed.success) {
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({
        path: v.getDotPath(i) ?? '(body)',
        reason: v.getDotPath(i) ? i.message : 'must be an object: {"value": "…"}',
      })),
    );
  }
  return d.ownerSecrets.put(name, parsed.output.value, d.clock.now().toISOString());
}

export async function listSecrets(d: Deps) {
  return { secrets: await d.ownerSecrets.list() };
}

export async function deleteSecret(d: Deps, name: string): Promise<void> {
  checkName(name);
  if (!(await d.ownerSecrets.remove(name))) throw new AppError('SecretNotFound');
}
