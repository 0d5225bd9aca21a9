/** The owner's secrets: set, list and delete (never read back). */
import * as v from 'valibot';
import { AppError } from '../core/errors';
import { OWNER_SECRET_MAX_LENGTH, OWNER_SECRET_NAME_PATTERN } from '../core/owner-secrets';
import type { Deps } from '../adapters/deps';

const NAME_RULE = 'must start with a letter or an underscore and hold only letters, digits and underscores (at most 64)';

// The messages never repeat the value: whatever is wrong with a request, its secret is not echoed.
const SecretBody = v.strictObject(
  {
    value: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'must not be empty'),
      v.maxLength(OWNER_SECRET_MAX_LENGTH, `must be at most ${OWNER_SECRET_MAX_LENGTH} characters long`),
    ),
  },
  (issue) => (issue.expected === 'never' ? 'is not a known field; the body is {"value": "…"}' : 'is required: the body is {"value": "…"}'),
);

function checkName(name: string): void {
  if (!OWNER_SECRET_NAME_PATTERN.test(name)) throw new AppError('InvalidRequest', [{ path: 'name', reason: NAME_RULE }]);
}

export async function putSecret(d: Deps, name: string, body: string | null) {
  checkName(name);
  let raw: unknown;
  try {
    raw = body === null || body.trim() === '' ? undefined : JSON.parse(body);
  } catch {
    throw new AppError('InvalidRequest', [{ path: '(body)', reason: 'body is not valid JSON' }]);
  }
  const parsed = v.safeParse(SecretBody, raw);
  if (!parsed.success) {
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: v.getDotPath(i) ? i.message : 'must be an object: {"value": "…"}' })),
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
