import { deploymentOpenApi } from '../../../functions/core/openapi';
import { DEPLOYMENT_ROUTES } from '../../routes';
import { deploymentSnippets, SNIPPET_KEY_VARIABLE, type DeploymentSnippets } from '../../../functions/core/snippets';
import type { Published } from '../client';
import type { Ctx } from '../context';
import { UsageError } from '../errors';
import { checkPipelineId } from '../files';
import { fields, literal, type Colors } from '../output';

export interface PublishOptions {
  snippet?: SnippetLanguage;
  hideInput: string[];
  hideOutput: string[];
  showInput: string[];
  showOutput: string[];
  /** --form (true) or --no-form (false): the web form; absent leaves it as it is. */
  form?: boolean;
  formTitle?: string;
  formDescription?: string;
}

type Visibility = Record<string, { visible: boolean }>;

/** Turns the --hide-input/--hide-output/--show-input/--show-output lists (comma-separated, repeatable) into the publish body. */
export function visibilityBody(o: PublishOptions): {
  inputs?: Visibility;
  outputs?: Visibility;
  form?: { enabled: boolean; title?: string; description?: string };
} {
  const section = (hide: string[], show: string[], what: string): Visibility | undefined => {
    const ids = (xs: string[]) =>
      xs
        .flatMap((x) => x.split(','))
        .map((x) => x.trim())
        .filter((x) => x !== '');
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
  const described = o.formTitle !== undefined || o.formDescription !== undefined;
  if (o.form === false && described)
    throw new UsageError('--form-title and --form-description describe a form that --no-form turns off; pick one');
  const form =
    o.form === undefined && !described
      ? undefined
      : {
          enabled: o.form ?? true,
          ...(o.formTitle !== undefined ? { title: o.formTitle } : {}),
          ...(o.formDescription !== undefined ? { description: o.formDescription } : {}),
        };
  return { ...(inputs ? { inputs } : {}), ...(outputs ? { outputs } : {}), ...(form ? { form } : {}) };
}

export type SnippetLanguage = 'curl' | 'typescript' | 'python' | 'mcp' | 'none';
export const SNIPPET_LANGUAGES: readonly SnippetLanguage[] = ['curl', 'typescript', 'python', 'mcp', 'none'];

/** The MCP URL the publish answered; a service from before it had none: the same path under the execute URL's base. */
export const mcpUrlOf = (p: Published): string =>
  p.mcp_url ??
  p.execute_url.replace(new RegExp(`/v1/deployments/${p.deployment_id}/executions/?$`), `/v1/deployments/${p.deployment_id}/mcp`);

/**
 * Ready-to-run snippets for a published deployment, from the same OpenAPI document the service
 * serves for it (built here from the publish answer, as the service builds it from the record).
 */
export function publishedSnippets(pipeline: string, p: Published): DeploymentSnippets {
  const suffix = new RegExp(`/v1/deployments/${p.deployment_id}/executions/?$`);
  const baseUrl = p.execute_url.replace(suffix, '');
  const doc = deploymentOpenApi(
    {
      deployment_id: p.deployment_id,
      pipeline_id: pipeline,
      version: p.version,
      published_at: p.published_at,
      inputs: p.inputs,
      outputs: p.outputs,
      waits: p.waits ?? [],
    },
    baseUrl,
    DEPLOYMENT_ROUTES,
  );
  return deploymentSnippets(doc);
}

export function renderPublished(pipeline: string, p: Published, created: boolean, c: Colors, snippet: SnippetLanguage = 'curl'): string {
  const lines: string[] = [];
  lines.push(`${c.green('✔')} ${created ? 'published' : 'updated'} ${c.bold(pipeline)} version ${p.version}`);
  const inputs = p.inputs.map((i) => `${i.id}: ${i.value_type} = ${literal(i.value)}${i.visible ? '' : ' (hidden)'}`);
  const outputs = p.outputs.map((o) => `${o.id}${o.visible ? '' : ' (hidden)'}`);
  lines.push(
    fields(
      [
        ['deployment', p.deployment_id],
        ['execute URL', p.execute_url],
        // For agents: an MCP client takes this URL and the key (--snippet mcp prints a configuration).
        ['MCP URL', mcpUrlOf(p)],
        ...(p.form_url ? ([['form', p.form_url]] as [string, string][]) : []),
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
  if (snippet !== 'none') {
    lines.push('');
    lines.push(c.dim(`  Try it (${snippet}; --snippet ${SNIPPET_LANGUAGES.join('|')}):`));
    // Printed at the first column, as it is to be pasted: Python refuses an indented block.
    lines.push(
      p.api_key
        ? `export ${SNIPPET_KEY_VARIABLE}=${p.api_key}`
        : `# export ${SNIPPET_KEY_VARIABLE}= the API key shown at the first publish (lost it? pipegate keys rotate ${pipeline})`,
    );
    lines.push(publishedSnippets(pipeline, p)[snippet]);
  }
  return lines.join('\n');
}

/** `pipegate publish <pipeline> [--hide-input a,b] [--hide-output x] [--show-input …] [--show-output …]` */
export async function publish(ctx: Ctx, pipeline: string, opts: PublishOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { status, body, raw } = await ctx.client.publish(pipeline, visibilityBody(opts));
  ctx.out.document(raw);
  ctx.out.line(renderPublished(pipeline, body, status === 201, ctx.out.c, opts.snippet));
  return 0;
}
