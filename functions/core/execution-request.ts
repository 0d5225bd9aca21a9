/**
 * The caller's POST executions request (contract §4 and §5): size, media type, structure,
 * callback and inputs, checked in the order that decides which error a caller sees. Every
 * structural (400) problem is reported before any semantic (422) one.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { sortedJson } from './canonical';
import { checkUrl } from './address-guard';
import { AppError } from './errors';
import type { Contract, RawValue } from './types';
import { isPlainObject, referenceProblem, requestValueType, valueTypeProblem } from './values';

export interface ExecutionRequest {
  callback: string | null;
  /** Every contract input: its published value, overridden by the request's. */
  inputs: Record<string, RawValue>;
  /** sha256 hex of the canonical request body, for Idempotency-Key comparisons. */
  requestHash: string;
}

export interface ExecutionRequestLimits {
  maxInputs: number;
  allowPrivateUrls: boolean;
}

const REQUEST_VALUE_TYPES = ['RAW', 'REFERENCE', 'ASSET'] as const;
const JSON_WHITESPACE = /^[ \t\r\n]*$/;
const JSON_MEDIA_TYPE = /^application\/(?:json|[a-z0-9!#$&^_.+-]+\+json)$/;

const plainObject = v.custom<Record<string, unknown>>(isPlainObject, 'must be an object');

const strictFields = (issue: v.BaseIssue<unknown>): string =>
  issue.expected === 'never' ? 'is not a known field' : 'is required';

const RAW_MESSAGE = 'must be a string, a finite number or a boolean';

const ValueObject = v.pipe(
  plainObject,
  v.strictObject(
    {
      value: v.union([v.string(), v.pipe(v.number(), v.finite(RAW_MESSAGE)), v.boolean()], RAW_MESSAGE),
      value_type: v.picklist(REQUEST_VALUE_TYPES, `must be one of ${REQUEST_VALUE_TYPES.join(', ')}`),
    },
    strictFields,
  ),
);

// workflow_input's entries are checked one by one (below) rather than with v.record, which
// silently skips keys such as `constructor` that are nonetheless valid input ids.
const Body = v.pipe(
  plainObject,
  v.strictObject(
    {
      callback: v.optional(v.nullable(v.string('must be a string'))),
      workflow_input: v.optional(plainObject),
    },
    strictFields,
  ),
);

type ValueObject = v.InferOutput<typeof ValueObject>;

function structureError(issue: v.BaseIssue<unknown>, prefix: string | null): AppError {
  const inner = v.getDotPath(issue);
  const path = [prefix, inner].filter((p) => p !== null && p !== '').join('.');
  return new AppError('InvalidInputStructure', path === '' ? `body ${issue.message}` : `${path} ${issue.message}`);
}

function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return JSON_MEDIA_TYPE.test(essence);
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
  // Its size was checked where every route's body is read (assertBodyWithin).
  const text = req.body ?? '';

  let raw: unknown = {};
  if (!JSON_WHITESPACE.test(text)) {
    if (!isJsonContentType(req.contentType)) {
      throw new AppError('UnsupportedMediaType', 'the body must be JSON (Content-Type: application/json)');
    }
    try {
      raw = JSON.parse(text);
    } catch {
      throw new AppError('InvalidInputStructure', 'body is not valid JSON');
    }
  }

  const body = v.safeParse(Body, raw, { abortEarly: true });
  if (!body.success) throw structureError(body.issues[0], null);

  const given: [string, ValueObject][] = [];
  for (const [id, entry] of Object.entries(body.output.workflow_input ?? {})) {
    const parsed = v.safeParse(ValueObject, entry, { abortEarly: true });
    if (!parsed.success) throw structureError(parsed.issues[0], `workflow_input.${id}`);
    given.push([id, parsed.output]);
  }

  const hasCallback = isPlainObject(raw) && Object.prototype.hasOwnProperty.call(raw, 'callback');
  const callback = body.output.callback ?? null;
  if (hasCallback && (callback === null || callback.trim() === '')) {
    throw new AppError('MissingCallbackUrl', 'callback must be a URL when it is given');
  }

  if (given.length > opts.maxInputs) {
    throw new AppError('InvalidInput', `at most ${opts.maxInputs} inputs may be given, got ${given.length}`);
  }
  const visible = new Map(contract.inputs.filter((i) => i.visible).map((i) => [i.id, i]));
  const overrides = new Map<string, RawValue>();
  for (const [id, { value, value_type }] of given) {
    const input = visible.get(id);
    // Hidden and unknown ids answer alike so that a caller cannot learn what is hidden.
    if (input === undefined) {
      const known = [...visible.keys()];
      throw new AppError('InvalidInput', `unknown input '${id}'; ${known.length ? `the inputs are: ${known.join(', ')}` : 'this deployment takes no inputs'}`);
    }
    if (value_type === 'ASSET') {
      throw new AppError('InvalidInput', `input '${id}': value_type ASSET is not supported yet; send RAW values, or REFERENCE URLs for reference inputs`);
    }
    const wanted = requestValueType(input.value_type);
    if (value_type !== wanted) {
      throw new AppError('InvalidInput', `input '${id}' takes value_type ${wanted} (its type is ${input.value_type}), got ${value_type}`);
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
    contract.inputs.map((i) => [i.id, overrides.get(i.id) ?? i.value]),
  );
  // Requests equal up to key order and whitespace hash equally.
  return { callback, inputs, requestHash: createHash('sha256').update(sortedJson(raw)).digest('hex') };
}
