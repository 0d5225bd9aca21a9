/**
 * An OpenAPI 3.1 document for one deployment: what a caller may send and gets back, with the
 * published values as defaults. Generated from the contract, so it is never out of date, and
 * made of the same parts as the whole-service document (openapi-shared.ts), so the two agree.
 */
import { CALLER_ROUTES } from '../../lib/routes';
import { callerContract } from './contract';
import {
  CALLER_PARAMETERS,
  CALLER_RESPONSES,
  CALLER_SCHEMAS,
  CALLER_SECURITY_SCHEMES,
  routePaths,
  finishedSchema,
  reachableComponents,
  schemaRef,
  type JsonSchema,
} from './openapi-shared';
import type { Deployment, InputValueType } from './types';
import { acceptsText, INLINE_ASSET_BODY_MAX_BYTES, UPLOAD_VALUE_PREFIX, UPLOADS_ROUTE } from './assets';
import { requestValueType } from './values';

const JSON_TYPES: Record<InputValueType, JsonSchema> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  float: { type: 'number' },
  boolean: { type: 'boolean' },
  reference: { type: 'string', format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' },
  asset: {
    type: 'string',
    description: `The file: base64, a base64 data URI (data:<media type>;base64,...), or the \`asset.value\` an upload answered (${UPLOAD_VALUE_PREFIX}<upload id>). Inline files make the request body at most ${INLINE_ASSET_BODY_MAX_BYTES} bytes; send larger ones with ${UPLOADS_ROUTE}. The media type is sniffed from the bytes.`,
  },
};

export type DeploymentDocumentSource = Pick<Deployment, 'deployment_id' | 'pipeline_id' | 'version' | 'inputs' | 'outputs' | 'published_at'> & {
  /** Only whether it is on: the link is the owner's to share, never a caller's to read. */
  form?: { enabled: boolean } | null;
};

/**
 * What a caller should know of a web form: that one exists, and what it means for the
 * executions this key can read; never its link (the owner shares that with whom they choose).
 */
export const FORM_NOTE =
  'This deployment also has a web form, a page its owner shares by link. Executions started from it are executions of this deployment: readable with this key, and their results list each visible file output in `output_artifacts` (which stays `[]` for executions started with a key).';

/** This deployment's request body: its visible inputs, each typed, with the published value as default. */
function executionRequest(c: ReturnType<typeof callerContract>): JsonSchema {
  const general = CALLER_SCHEMAS.ExecutionRequest as { properties: Record<string, JsonSchema> };
  return {
    ...general,
    // Every field as the general request documents it (a field added there appears here too);
    // workflow_input names this deployment's inputs.
    properties: {
      ...general.properties,
      workflow_input: {
        type: 'object',
        additionalProperties: false,
        description: 'Keyed by input id; an input not given takes its published value.',
        properties: Object.fromEntries(
          c.inputs.map((i) => [
            i.id,
            {
              type: 'object',
              additionalProperties: false,
              required: ['value', 'value_type'],
              description: `Input \`${i.id}\` (${i.value_type}${i.value_type === 'asset' ? `: accepts ${acceptsText(i)}` : ''}).`,
              properties: { value: { ...JSON_TYPES[i.value_type], default: i.value }, value_type: { const: requestValueType(i.value_type) } },
            },
          ]),
        ),
      },
    },
  };
}

/** Each output's schema by the kind its contract recorded; older contracts did not: either. */
const OUTPUT_SCHEMAS = { RAW: 'RawOutputValue', ASSET: 'AssetOutputValue', either: 'OutputValue' } as const;

/** This deployment's result: its visible outputs by id, each RAW or ASSET as published. */
function executionResult(c: ReturnType<typeof callerContract>): JsonSchema {
  const general = CALLER_SCHEMAS.ExecutionResult as { properties: Record<string, JsonSchema> };
  return {
    ...general,
    properties: {
      ...general.properties,
      response_data: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(c.outputs.map((o) => [o.id, schemaRef(OUTPUT_SCHEMAS[o.value_type ?? 'either'])])),
        description: 'Visible outputs by id once completed; `{}` otherwise.',
      },
    },
  };
}

export function deploymentOpenApi(d: DeploymentDocumentSource, baseUrl: string) {
  const c = callerContract(d);
  const requestExample = {
    workflow_input: Object.fromEntries(c.inputs.map((i) => [i.id, { value: i.value, value_type: requestValueType(i.value_type) }])),
  };
  const names = { request: 'DeploymentExecutionRequest', result: 'DeploymentExecutionResult', finished: 'DeploymentExecutionFinished' };
  const all = routePaths(
    CALLER_ROUTES,
    { deploymentId: d.deployment_id, rename: { ExecutionRequest: names.request, ExecutionResult: names.result, ExecutionFinished: names.finished }, examples: { ExecutionRequest: requestExample } },
  );
  // The uploads route serves asset inputs only: a deployment without any does not offer it.
  const paths = c.inputs.some((i) => i.value_type === 'asset') ? all : Object.fromEntries(Object.entries(all).filter(([path]) => !path.endsWith('/uploads')));
  const result = executionResult(c);
  const used = reachableComponents(paths, {
    parameters: CALLER_PARAMETERS,
    responses: CALLER_RESPONSES,
    schemas: { ...CALLER_SCHEMAS, [names.request]: executionRequest(c), [names.result]: result, [names.finished]: finishedSchema(result) },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: `pipegate deployment ${d.deployment_id}`,
      version: `${d.version}`,
      description: `Pipeline ${d.pipeline_id}, version ${d.version}, published ${d.published_at}.${d.form?.enabled ? `\n\n${FORM_NOTE}` : ''}`,
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
