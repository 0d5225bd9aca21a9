import { OWNER_SECRET_NAME_PATTERN } from '../../../functions/core/owner-secrets';
import type { Ctx } from '../context';
import { UsageError } from '../errors';
import { table } from '../output';
import { readSecret } from '../secret-input';

function checkName(name: string): void {
  if (!OWNER_SECRET_NAME_PATTERN.test(name)) {
    throw new UsageError(
      `${JSON.stringify(name)} is not a secret name`,
      'names start with a letter or an underscore and hold only letters, digits and underscores (at most 64), e.g. RATES_TOKEN',
    );
  }
}

/** `pipegate secrets set NAME`: the value from stdin (piped) or a prompt that does not echo. */
export async function setSecret(ctx: Ctx, name: string): Promise<number> {
  checkName(name);
  const { out, io } = ctx;
  if (!io.stdin)
    throw new UsageError(
      'secrets set reads the value from stdin, and there is none',
      `e.g. printf %s "$TOKEN" | pipegate secrets set ${name}`,
    );
  let value: string;
  try {
    value = await readSecret(io.stdin, io.stderr, `value for ${name} (not shown): `);
  } catch (e) {
    throw new UsageError(`secrets set ${name}: ${(e as Error).message}`);
  }
  if (value === '')
    throw new UsageError(
      `secrets set ${name}: the value is empty`,
      `pipe it in (printf %s "$TOKEN" | pipegate secrets set ${name}) or type it at the prompt`,
    );
  const { body, raw } = await ctx.client.setSecret(name, value);
  out.document(raw);
  out.line(`${out.c.green('✔')} secret ${out.c.bold(body.name)} set`);
  if (!out.json)
    out.note(out.e.dim(`pipelines use it as {{secrets.${body.name}}} in an http node's url or headers, $secrets.${body.name} in its body`));
  return 0;
}

/** `pipegate secrets list`: names and when they were set, never values. */
export async function listSecrets(ctx: Ctx): Promise<number> {
  const { body, raw } = await ctx.client.listSecrets();
  const { out } = ctx;
  out.document(raw);
  if (out.json) return 0;
  if (body.secrets.length === 0) {
    out.line('No secrets yet.');
    out.note(out.e.dim('set one: pipegate secrets set NAME (the value is read from stdin)'));
    return 0;
  }
  out.line(
    table(
      ['SECRET', 'UPDATED'],
      body.secrets.map((s) => [s.name, s.updated_at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')]),
      out.c,
    ),
  );
  return 0;
}

/** `pipegate secrets delete NAME` */
export async function deleteSecret(ctx: Ctx, name: string): Promise<number> {
  checkName(name);
  await ctx.client.deleteSecret(name);
  const { out } = ctx;
  out.document({ name, deleted: true });
  out.line(`${out.c.green('✔')} secret ${out.c.bold(name)} deleted`);
  return 0;
}
