/**
 * An OpenAPI 3.1 document for one deployment: what a caller may send and gets back, with the
 * published values as defaults. Generated from the contract, so it is never out of date, and
 * made of the same parts as the whole-service document (openapi-shared.ts), so the two agree.
 */
import * as v from 'valibot';
import { callerContract } from './contract';
import {
  CALLER_PARAMETERS,
  CALLER_RESPONSES,
  ALL_SCHEMAS,
  CALLER_SECURITY_SCHEMES,
  routePaths,
  finishedSchema,
  jsonSchemaOf,
  reachableComponents,
  type JsonSchema,
} from './openapi-shared';
import { SHAPES } from './shapes';
import type { Deployment } from './types';
import type { Route } from './route-types';
import { acceptsText } from './assets';
import { requestValueType, VALUE_SCHEMAS } from './values';

export type DeploymentDocumentSource = Pick<
  Deployment,
  'deployment_id' | 'pipeline_id' | 'version' | 'inputs' | 'outputs' | 'waits' | 'published_at'
> & {
  /** Only whether it is on: the link is the owner's to share, never a caller's to read. */
  form?: { enabled: boolean } | null;
};

/**
 * What a caller should know of a web form: that one exists, and what it means for the
 * executions this key can read; never its link (the owner shares that with whom they choose).
 */
export const FORM_NOTE =
  'This deployment also has a web form, a page its owner shares by link. Executions started from it are executions of this deployment: readable with this key, and their results list each visible file output in `output_artifacts` (which stays `[]` for executions started with a key).';

/**
 * This deployment's `workflow_input`: each visible input by id, its value of the input's type
 * (values.ts, the schema the execute parser checks with) with the published value as default.
 */
function workflowInput(c: ReturnType<typeof callerContract>) {
  return v.pipe(
    v.strictObject(
      Object.fromEntries(
        c.inputs.map((i) => [
          i.id,
          v.optional(
            v.pipe(
              v.strictObject({
                // A metadata default: `value` stays required, as the parser has it.
                value: v.pipe(VALUE_SCHEMAS[i.value_type], v.metadata({ default: i.value })),
                value_type: v.literal(requestValueType(i.value_type)),
              }),
              v.description(`Input \`${i.id}\` (${i.value_type}${i.value_type === 'asset' ? `: accepts ${acceptsText(i)}` : ''}).`),
            ),
          ),
        ]),
      ),
    ),
    v.description('Keyed by input id; an input not given takes its published value.'),
  );
}

/** This deployment's request body: every field as the general request documents it, and its own `workflow_input`. */
function executionRequest(c: ReturnType<typeof callerContract>): JsonSchema {
  const general = ALL_SCHEMAS.ExecutionRequest as { properties: Record<string, JsonSchema> };
  // A field added to the general request appears here too; only workflow_input is this deployment's.
  return { ...general, properties: { ...general.properties, workflow_input: jsonSchemaOf(workflowInput(c)) } };
}

/** Each output's shape by the kind its contract recorded (a list of files its own); older contracts did not: either. */
const OUTPUT_SHAPES = { RAW: 'RawOutputValue', ASSET: 'AssetOutputValue', list: 'AssetListOutputValue', either: 'OutputValue' } as const;
const OUTPUT_COMPONENTS = Object.fromEntries(Object.values(OUTPUT_SHAPES).map((name) => [name, SHAPES[name]]));

const outputShape = (o: ReturnType<typeof callerContract>['outputs'][number]) =>
  SHAPES[OUTPUT_SHAPES[o.value_type === 'ASSET' && o.list === true ? 'list' : (o.value_type ?? 'either')]];

/**
 * This deployment's result: its visible outputs by id, each RAW or ASSET as published (a `$ref`
 * to its shape). A completed result carries every output but those that may be skipped (their
 * branch may not run): the schema requires the others once `status` is `completed`.
 */
function executionResult(c: ReturnType<typeof callerContract>): JsonSchema {
  const general = ALL_SCHEMAS.ExecutionResult as { properties: Record<string, JsonSchema> };
  const responseData = v.pipe(
    v.strictObject(Object.fromEntries(c.outputs.map((o) => [o.id, v.optional(outputShape(o))]))),
    v.description('Visible outputs by id once completed (those that may be skipped only when their branch ran); `{}` otherwise.'),
  );
  const data = jsonSchemaOf(responseData, OUTPUT_COMPONENTS) as JsonSchema & { properties: Record<string, JsonSchema> };
  for (const o of c.outputs) {
    const p = data.properties[o.id];
    if (o.optional === true && p !== undefined)
      data.properties[o.id] = { ...p, description: 'Absent when none of the nodes it comes from ran (a branch not taken).' };
  }
  const always = c.outputs.filter((o) => o.optional !== true).map((o) => o.id);
  return {
    ...general,
    properties: { ...general.properties, response_data: data },
    ...(always.length === 0
      ? {}
      : {
          if: { properties: { status: { const: 'completed' } }, required: ['status'] },
          then: {
            properties: {
              response_data: {
                type: 'object',
                properties: Object.fromEntries(always.map((id) => [id, data.properties[id]])),
                required: always,
              },
            },
          },
        }),
  };
}

/** The resume route (lib/routes.ts), which a deployment's document offers when it has visible wait nodes. */
export const RESUME_PATH = '/v1/resume/{token}';

/** A visible wait node's event, as its `fields` say (any JSON object without them). */
function waitEvent(w: ReturnType<typeof callerContract>['waits'][number]) {
  const named = `\`${w.id}\`${w.label === undefined ? '' : ` (${w.label})`}`;
  if (w.fields === undefined)
    return v.pipe(v.record(v.string(), v.unknown()), v.description(`The event of wait node ${named}: any JSON object.`));
  const fields = Object.entries(w.fields).map(([name, f]) => [
    name,
    v.pipe(VALUE_SCHEMAS[f.value_type], v.description(f.label ?? f.description ?? name)),
  ]);
  return v.pipe(v.strictObject(Object.fromEntries(fields)), v.description(`The event of wait node ${named}: each field required.`));
}

/** This deployment's resume body: the event of one of its visible wait nodes. */
function resumeRequest(c: ReturnType<typeof callerContract>): JsonSchema {
  const events = c.waits.map(waitEvent);
  const schema = events.length === 1 ? events[0] : v.union(events as [ReturnType<typeof waitEvent>, ...ReturnType<typeof waitEvent>[]]);
  return jsonSchemaOf(
    v.pipe(
      schema as ReturnType<typeof waitEvent>,
      v.description("POSTed to a resume URL of an execution's `waiting` list: the wait node's value."),
    ),
  );
}

/** What the document's description says of the visible wait nodes. */
function waitsNote(c: ReturnType<typeof callerContract>): string {
  if (c.waits.length === 0) return '';
  const each = c.waits.map((w) => `\`${w.id}\`${w.label === undefined ? '' : ` (${w.label})`}, for at most ${w.timeout_ms} ms`).join('; ');
  return `\n\nWait nodes a caller resumes: ${each}. While an execution waits on one, its status (and result, events) carry \`waiting\` with the node's resume URL: POST the event there, with no key (\`POST /v1/resume/{token}\`).`;
}

/**
 * `routes`: the caller routes (lib/routes.ts CALLER_ROUTES), the operations each deployment's
 * document offers, and the resume route, offered when the deployment has visible wait nodes.
 */
export function deploymentOpenApi(d: DeploymentDocumentSource, baseUrl: string, routes: readonly Route[]) {
  const c = callerContract(d);
  const requestExample = {
    workflow_input: Object.fromEntries(c.inputs.map((i) => [i.id, { value: i.value, value_type: requestValueType(i.value_type) }])),
  };
  const names = {
    request: 'DeploymentExecutionRequest',
    result: 'DeploymentExecutionResult',
    finished: 'DeploymentExecutionFinished',
    resume: 'DeploymentResumeRequest',
  };
  const all = routePaths(routes, {
    deploymentId: d.deployment_id,
    rename: {
      ExecutionRequest: names.request,
      ExecutionResult: names.result,
      ExecutionFinished: names.finished,
      ResumeRequest: names.resume,
    },
    examples: { ExecutionRequest: requestExample },
  });
  // The uploads route serves asset inputs only, the resume route visible wait nodes only: a
  // deployment without any does not offer it.
  const offered = (path: string): boolean =>
    (!path.endsWith('/uploads') || c.inputs.some((i) => i.value_type === 'asset')) && (path !== RESUME_PATH || c.waits.length > 0);
  const paths = Object.fromEntries(Object.entries(all).filter(([path]) => offered(path)));
  const result = executionResult(c);
  const used = reachableComponents(paths, {
    parameters: CALLER_PARAMETERS,
    responses: CALLER_RESPONSES,
    schemas: {
      ...ALL_SCHEMAS,
      [names.request]: executionRequest(c),
      [names.result]: result,
      [names.finished]: finishedSchema(result),
      ...(c.waits.length > 0 ? { [names.resume]: resumeRequest(c) } : {}),
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: `pipegate deployment ${d.deployment_id}`,
      version: `${d.version}`,
      description: `Pipeline ${d.pipeline_id}, version ${d.version}, published ${d.published_at}.${d.form?.enabled ? `\n\n${FORM_NOTE}` : ''}${waitsNote(c)}`,
      // The API is its owner's, not pipegate's, so its terms are theirs; linters want a license
      // named, and an SPDX reference of its own says so plainly.
      license: { name: `Terms of the owner of pipeline ${d.pipeline_id}`, identifier: 'LicenseRef-Owner-Terms' },
    },
    servers: [{ url: baseUrl }],
    tags: [{ name: 'callers', description: 'Execute this deployment, with its API key.' }],
    paths,
    components: { securitySchemes: CALLER_SECURITY_SCHEMES, ...used },
  };
}
