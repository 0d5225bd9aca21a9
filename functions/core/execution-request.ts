/**
 * The caller's POST executions request (contract §4 and §5): size, media type, structure,
 * callback and inputs, checked in the order that decides which error a caller sees. Every
 * structural (400) problem is reported before any semantic (422) one.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { sortedJson } from './canonical';
import { checkUrl } from './address-guard';
import { acceptsText, parseAssetValue, type AssetValueForm } from './assets';
import { assertBodySize, type BodyLimits } from './body-size';
import { AppError } from './errors';
import type { Contract, RawValue } from './types';
import { ownRecord, plainObject, RawValue as RawValueSchema, strictFields } from './schema-parts';
import { isPlainObject, referenceProblem, requestValueType, valueTypeProblem } from './values';
import { assertJsonMediaType, isBlankJson, isJsonMediaType, parseJson } from './json-body';

export interface ExecutionRequest {
  callback: string | null;
  /** Every contract input but asset inputs: its published value, overridden by the request's. */
  inputs: Record<string, RawValue>;
  /**
   * Every asset input: its bytes (given inline, or its published data URI) or the upload it
   * names. Not yet sniffed: the service sniffs, checks the input's restrictions and stores them.
   */
  assets: Record<string, AssetValueForm>;
  /** sha256 hex of the canonical request body, for Idempotency-Key comparisons. */
  requestHash: string;
}

export interface ExecutionRequestLimits {
  maxBodyBytes: number;
  maxInputs: number;
  allowPrivateUrls: boolean;
}

const REQUEST_VALUE_TYPES = ['RAW', 'REFERENCE', 'ASSET'] as const;

/*
 * The request's shape, declared once: the parser below checks bodies with it, and shapes.ts
 * documents it (ExecutionRequest, InputValue), so what is documented is what is checked. Its
 * messages are what a caller reads in a 400's `detail` after the field's path.
 */

/** One entry of workflow_input. */
export const InputValue = v.pipe(
  plainObject('must be an object'),
  v.strictObject(
    {
      value: RawValueSchema,
      value_type: v.pipe(
        v.picklist(REQUEST_VALUE_TYPES, `must be one of ${REQUEST_VALUE_TYPES.join(', ')}`),
        v.description(
          'RAW for string, integer, float and boolean inputs; REFERENCE (an absolute http(s) URL that passes the address guard) for reference inputs; ASSET (base64, a base64 data URI, or the value an upload answered) for asset inputs.',
        ),
      ),
    },
    strictFields,
  ),
);

/** workflow_input: every key is an input id to check, `constructor` included. */
export const WorkflowInput = v.pipe(plainObject('must be an object'), ownRecord(v.string(), InputValue, 'must be an object'));

/**
 * The execute request. The callback is only a string here: whether it is blank (400 Missing
 * Callback URL) or an allowed URL (422 Invalid Callback URL) is decided after the structure.
 */
export const ExecutionRequest = v.pipe(
  plainObject('must be an object'),
  v.strictObject(
    {
      callback: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.metadata({ format: 'uri' }),
          v.description(
            'Absolute http(s) URL that receives a signed POST (Standard Webhooks) when the execution ends. null, empty or blank: 400 Missing Callback URL.',
          ),
        ),
      ),
      workflow_input: v.optional(v.pipe(WorkflowInput, v.description('Keyed by input id.'))),
    },
    strictFields,
  ),
  v.description('An empty body means `{}`. Inputs not given take their published value; hidden inputs cannot be set.'),
);

function structureError(issue: v.BaseIssue<unknown>): AppError {
  const path = v.getDotPath(issue) ?? '';
  return new AppError('InvalidInputStructure', path === '' ? `body ${issue.message}` : `${path} ${issue.message}`);
}

function callbackProblem(callback: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(callback);
  } catch {
    return 'callback must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'callback must be an absolute http or https URL';
  return checkUrl(callback, { allowPrivate });
}

/** Parses and checks a POST executions request against a deployment's contract. */
export function parseExecutionRequest(
  req: { body: string | null; contentType: string | undefined },
  contract: Contract,
  opts: ExecutionRequestLimits,
): ExecutionRequest {
  // The execute route takes inline assets: only its ceiling is known before the body is read
  // as JSON, the rest once its ASSET values are counted (none in a body that is not JSON).
  const text = req.body ?? '';
  const size = Buffer.byteLength(text, 'utf8');
  const limits: BodyLimits = { maxBodyBytes: opts.maxBodyBytes, inlineAssets: true };
  assertBodySize(size, limits);

  let raw: unknown = {};
  if (!isBlankJson(text)) {
    if (!isJsonMediaType(req.contentType)) {
      assertBodySize(size, limits, 0);
      assertJsonMediaType(text, req.contentType);
    }
    const parsed = parseJson(text);
    if (!parsed.ok) {
      assertBodySize(size, limits, 0);
      throw new AppError('InvalidInputStructure', parsed.detail);
    }
    raw = parsed.value;
  }
  assertBodySize(size, limits, inlineAssetChars(raw));

  const body = v.safeParse(ExecutionRequest, raw);
  // A null callback is structurally a missing string, but it answers 400 Missing Callback URL,
  // after every other structural problem. Of those, the top level's come first, then each
  // input's in order: the first is the one reported.
  const nullCallback = (i: v.BaseIssue<unknown>) => i.input === null && v.getDotPath(i) === 'callback';
  const structural = body.success ? [] : body.issues.filter((i) => !nullCallback(i));
  const first = structural.find((i) => (i.path?.length ?? 0) <= 1) ?? structural[0];
  if (first !== undefined) throw structureError(first);
  const request: v.InferOutput<typeof ExecutionRequest> = body.success ? body.output : {};
  const given = Object.entries(request.workflow_input ?? {});

  const hasCallback = isPlainObject(raw) && Object.prototype.hasOwnProperty.call(raw, 'callback');
  const callback = request.callback ?? null;
  if (hasCallback && (callback === null || callback.trim() === '')) {
    throw new AppError('MissingCallbackUrl', 'callback must be a URL when it is given');
  }

  if (given.length > opts.maxInputs) {
    throw new AppError('InvalidInput', `at most ${opts.maxInputs} inputs may be given, got ${given.length}`);
  }
  const visible = new Map(contract.inputs.filter((i) => i.visible).map((i) => [i.id, i]));
  const overrides = new Map<string, RawValue>();
  const assets = new Map<string, AssetValueForm>();
  for (const [id, { value, value_type }] of given) {
    const input = visible.get(id);
    // Hidden and unknown ids answer alike so that a caller cannot learn what is hidden.
    if (input === undefined) {
      const known = [...visible.keys()];
      throw new AppError(
        'InvalidInput',
        `unknown input '${id}'; ${known.length ? `the inputs are: ${known.join(', ')}` : 'this deployment takes no inputs'}`,
      );
    }
    const wanted = requestValueType(input.value_type);
    if (value_type !== wanted) {
      throw new AppError('InvalidInput', `input '${id}' takes value_type ${wanted} (its type is ${input.value_type}), got ${value_type}`);
    }
    if (input.value_type === 'asset') {
      assets.set(id, assetForm(id, input, value));
      continue;
    }
    const wrong =
      input.value_type === 'reference'
        ? referenceProblem(value, { allowPrivate: opts.allowPrivateUrls })
        : valueTypeProblem(input.value_type, value);
    if (wrong !== null) throw new AppError('InvalidInput', `input '${id}' ${wrong}`);
    overrides.set(id, value);
  }

  if (callback !== null) {
    const problem = callbackProblem(callback, opts.allowPrivateUrls);
    if (problem !== null) throw new AppError('InvalidCallbackUrl', problem);
  }

  // fromEntries defines own properties, so an input named `__proto__` stays an ordinary key.
  const inputs: Record<string, RawValue> = Object.fromEntries(
    contract.inputs.filter((i) => i.value_type !== 'asset').map((i) => [i.id, overrides.get(i.id) ?? i.value]),
  );
  const assetInputs: Record<string, AssetValueForm> = Object.fromEntries(
    contract.inputs.filter((i) => i.value_type === 'asset').map((i) => [i.id, assets.get(i.id) ?? assetForm(i.id, i, i.value)]),
  );
  // Requests equal up to key order and whitespace hash equally.
  return { callback, inputs, assets: assetInputs, requestHash: createHash('sha256').update(sortedJson(raw)).digest('hex') };
}

/** An ASSET value's form, or 422 naming the input; inline bytes over the input's max_bytes are refused here already. */
function assetForm(id: string, input: Contract['inputs'][number], value: unknown): AssetValueForm {
  if (typeof value !== 'string')
    throw new AppError('InvalidInput', `input '${id}' must be base64, a base64 data URI or an upload's value (a string)`);
  const parsed = parseAssetValue(value);
  if (!parsed.ok) throw new AppError('InvalidInput', `input '${id}' ${parsed.reason}`);
  if (parsed.form.kind === 'inline' && input.max_bytes !== undefined && parsed.form.bytes.length > input.max_bytes) {
    throw new AppError('InvalidInput', `input '${id}' is ${parsed.form.bytes.length} bytes but accepts ${acceptsText(input)}`);
  }
  return parsed.form;
}

/** The characters of the body's ASSET values (each a JSON string without escapes: base64 has none). */
function inlineAssetChars(raw: unknown): number {
  if (!isPlainObject(raw) || !isPlainObject(raw.workflow_input)) return 0;
  let n = 0;
  for (const entry of Object.values(raw.workflow_input)) {
    if (isPlainObject(entry) && entry.value_type === 'ASSET' && typeof entry.value === 'string')
      n += Buffer.byteLength(entry.value, 'utf8');
  }
  return n;
}
