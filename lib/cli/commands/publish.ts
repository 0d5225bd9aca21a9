import { requestValueType, type RequestValueType } from '../../../functions/core/values';
import type { Published } from '../client';
import type { Ctx } from '../context';
import { UsageError } from '../errors';
import { checkPipelineId } from '../files';
import { fields, literal, shellQuote, type Colors } from '../output';

export interface PublishOptions {
  hideInput: string[];
  hideOutput: string[];
  showInput: string[];
  showOutput: string[];
}

type Visibility = Record<string, { visible: boolean }>;

/** Turns the --hide-input/--hide-output/--show-input/--show-output lists (comma-separated, repeatable) into the publish body. */
export function visibilityBody(o: PublishOptions): { inputs?: Visibility; outputs?: Visibility } {
  const section = (hide: string[], show: string[], what: string): Visibility | undefined => {
    const ids = (xs: string[]) => xs.flatMap((x) => x.split(',')).map((x) => x.trim()).filter((x) => x !== '');
    const map: Visibility = {};
    for (const id of ids(hide)) map[id] = { visible: false };
    for (const id of ids(show)) {
      if (map[id]?.visible === false) throw new UsageError(`${what} ${id} is both hidden and shown; pick one`);
      map[id] = { visible: true };
    }
    return Object.keys(map).length > 0 ? map : undefined;
  };
  const inputs = section(o.hideInput, o.showInput, 'input');
  const outputs = section(o.hideOutput, o.showOutput, 'output');
  return { ...(inputs ? { inputs } : {}), ...(outputs ? { outputs } : {}) };
}

/** A curl command a caller can paste: every visible input set to its published value. */
export function curlExample(p: Published, key: string): string {
  const workflowInput: Record<string, { value: unknown; value_type: RequestValueType }> = {};
  for (const i of p.inputs) if (i.visible) workflowInput[i.id] = { value: i.value, value_type: requestValueType(i.value_type) };
  const body = JSON.stringify(Object.keys(workflowInput).length ? { workflow_input: workflowInput } : {});
  return [
    `curl -sS -X POST ${shellQuote(p.execute_url)}`,
    `  -H ${key.startsWith('$') ? `"X-API-Key: ${key}"` : shellQuote(`X-API-Key: ${key}`)}`,
    `  -H 'Content-Type: application/json'`,
    `  -d ${shellQuote(body)}`,
  ].join(' \\\n');
}

export function renderPublished(pipeline: string, p: Published, created: boolean, c: Colors): string {
  const lines: string[] = [];
  lines.push(`${c.green('✔')} ${created ? 'published' : 'updated'} ${c.bold(pipeline)} version ${p.version}`);
  const inputs = p.inputs.map((i) => `${i.id}: ${i.value_type} = ${literal(i.value)}${i.visible ? '' : ' (hidden)'}`);
  const outputs = p.outputs.map((o) => `${o.id}${o.visible ? '' : ' (hidden)'}`);
  lines.push(
    fields(
      [
        ['deployment', p.deployment_id],
        ['execute URL', p.execute_url],
        ['inputs', inputs.join(', ') || '(none)'],
        ['outputs', outputs.join(', ') || '(none)'],
      ],
      c,
    ),
  );
  if (p.api_key !== undefined || p.signing_secret !== undefined) {
    lines.push('');
    const creds: [string, string][] = [];
    if (p.api_key !== undefined) creds.push(['API key', c.bold(p.api_key)]);
    if (p.signing_secret !== undefined) creds.push(['signing secret', c.bold(p.signing_secret)]);
    lines.push(fields(creds, c));
    lines.push(
      c.yellow(
        '  Store these now: they are shown only this once. The API key lets callers execute this\n' +
          '  deployment; the signing secret verifies its callbacks. Lost them? pipegate keys rotate ' +
          pipeline,
      ),
    );
  }
  lines.push('');
  lines.push(c.dim('  Try it:'));
  const key = p.api_key ?? '$PIPEGATE_API_KEY';
  lines.push(
    curlExample(p, key)
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n'),
  );
  return lines.join('\n');
}

/** `pipegate publish <pipeline> [--hide-input a,b] [--hide-output x] [--show-input …] [--show-output …]` */
export async function publish(ctx: Ctx, pipeline: string, opts: PublishOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { status, body, raw } = await ctx.client.publish(pipeline, visibilityBody(opts));
  ctx.out.document(raw);
  ctx.out.line(renderPublished(pipeline, body, status === 201, ctx.out.c));
  return 0;
}
