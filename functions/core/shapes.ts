/**
 * Every body the API takes or answers, declared once as a valibot schema with its description
 * beside it. The OpenAPI documents are converted from these (openapi-shared.ts, with
 * @valibot/to-json-schema), the owner routes' request bodies are validated with them, and
 * handler types are inferred from them, so a field added here is validated, typed and
 * documented at once.
 *
 * Conventions:
 * - A schema's name in SHAPES is its name under `#/components/schemas/`; a shape used inside
 *   another becomes a `$ref` to it.
 * - `v.description(…)` documents; `v.metadata({ … })` carries the few JSON Schema keywords
 *   valibot cannot express (the converter copies them as they are), each with its reason.
 * - Messages on request schemas are what a caller reads in `detail`, so they say what is wanted.
 */
import * as v from 'valibot';
import { ERRORS, KEY_REFUSALS, type ErrorName, type KeyRefusal } from './errors';
import { NODE_ID_PATTERN, PIPELINE_ID_PATTERN } from './ids';
import { NODE_SCHEMAS, NODE_TYPES } from './nodes';
import { OWNER_SECRET_MAX_LENGTH, OWNER_SECRET_NAME_PATTERN } from './owner-secrets';
import { STATUSES, TERMINAL } from './transitions';
import { RESUME_MAX_BYTES, WAIT_FIELD_TYPES } from './nodes/wait';
import { WORKFLOW_TYPES } from './workflow-type';

import { ExecutionRequest, InputValue, WorkflowInput } from './execution-request';
import { InputValueType, ownRecord, RawValue } from './schema-parts';
import { MEDIA_TYPE_ANY_CASE, UPLOAD_MAX_BYTES, UPLOAD_URL_TTL_SECONDS, UPLOAD_USE_SECONDS, UPLOAD_VALUE_PREFIX } from './assets';
import { EventsOption, FormOption, PublishRequest, Visibility } from './contract';
import { ASSET_RESTRICTIONS, Node, PipelineDefinitionSchema as PipelineDefinition } from './definition-schema';
import {
  MAX_CONSUMER_NAME_LENGTH,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_VALUE_LENGTH,
  MAX_QUOTA_EXECUTIONS,
  MAX_RATE_REQUESTS,
  MAX_RATE_WINDOW_SECONDS,
} from './consumers';
const CALLBACK_OUTCOMES = ['pending', 'delivered', 'dead_lettered'] as const;

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  max === Number.MAX_SAFE_INTEGER
    ? v.pipe(v.number(), v.integer(), v.minValue(min))
    : v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
const url = v.pipe(v.string(), v.url());
const nullableString = v.nullable(v.string());
const nullableInt = v.nullable(v.pipe(v.number(), v.integer()));
const duration = v.nullable(int(0));

/* ------------------------------------------------------------------ scalars */

export const Uuid = v.pipe(v.string(), v.uuid());
export const Timestamp = v.pipe(
  v.string(),
  v.isoTimestamp(),
  v.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  v.description('ISO 8601 UTC with milliseconds and `Z`.'),
);
export const NodeId = v.pipe(v.string(), v.regex(NODE_ID_PATTERN));
export const PipelineId = v.pipe(v.string(), v.regex(PIPELINE_ID_PATTERN));
export const SecretName = v.pipe(v.string(), v.regex(OWNER_SECRET_NAME_PATTERN));
export const ExecutionStatus = v.pipe(
  v.picklist(STATUSES),
  v.description('pending → running → completed | failed | cancelled, and pending → cancelled; nothing else.'),
);
const Terminal = v.picklist(TERMINAL as readonly (typeof STATUSES)[number][]);
const Detail = v.pipe(v.string(), v.minLength(1));

/* ------------------------------------------------------------------ errors */

const KEY_REASON_DOC =
  'Why the API key was refused: `missing` (none sent), `wrong_scheme` (an Authorization header of another scheme), `two_keys` (more than one key: both headers with different keys, or either header twice), `malformed` (not a pipegate key), `unknown` (no such key), `revoked` (replaced by a rotation), `expired` (its grace period after a rotation ended), `other_deployment` (the key of another deployment).';

/** An error body: `error` is the catalog's message, nothing else but the named fields. */
const errorBody = <F extends v.ObjectEntries>(name: ErrorName, description: string, fields?: F) =>
  v.pipe(v.strictObject({ error: v.literal(ERRORS[name].message), ...(fields ?? ({} as F)) }), v.description(description));

const Problem = v.strictObject({ path: v.string(), reason: v.string() });
const Problems = v.pipe(v.array(Problem), v.minLength(1), v.description('Every problem found, each with its path and reason.'));

/* ------------------------------------------------------------------ caller shapes */

/** A JSON-RPC id: a string or an integer (MCP never sends null as one). */
const JsonRpcId = v.union([v.string(), v.pipe(v.number(), v.integer())]);
/**
 * One message of the Model Context Protocol as the MCP route takes it (JSON-RPC 2.0): the SDK's
 * transport checks each against the protocol's own schemas, so this documents the envelope only.
 */
const McpMessage = v.pipe(
  v.looseObject({
    jsonrpc: v.literal('2.0'),
    id: v.optional(JsonRpcId),
    method: v.optional(
      v.pipe(
        v.string(),
        v.description('initialize, tools/list, tools/call, tasks/get, tasks/result, tasks/cancel, ping, or a notification.'),
      ),
    ),
    params: v.optional(v.looseObject({})),
  }),
  v.description(
    'A JSON-RPC 2.0 message of the Model Context Protocol (revisions 2025-06-18 and 2025-11-25): a request (`id`, `method`, `params`) or a notification (`method`, no `id`).',
  ),
);
/** What the transport answers by itself, before any method runs (a body that is not JSON-RPC, a wrong Accept or Content-Type). */
const McpErrorAnswer = v.pipe(
  v.looseObject({
    jsonrpc: v.literal('2.0'),
    id: v.nullable(JsonRpcId),
    error: v.looseObject({ code: v.pipe(v.number(), v.integer()), message: v.string() }),
  }),
  v.description('A JSON-RPC error object: -32700 parse error, -32600 invalid request, -32000 for a wrong Accept or Content-Type.'),
);

/** A resume's body: the wait node's value. */
const ResumeRequest = v.pipe(
  v.record(v.string(), v.unknown()),
  v.description(
    `Any JSON object of at most ${RESUME_MAX_BYTES} bytes (256 KiB): it becomes the wait node's value. A node that lists \`fields\` takes exactly those, each of its type.`,
  ),
);
const ResumeAccepted = v.pipe(
  v.object({
    status: v.pipe(
      v.picklist(['resumed', 'kept']),
      v.description(
        '`resumed`: the node was waiting and the execution goes on; `kept`: the node has not begun to wait yet, and takes it when it does.',
      ),
    ),
    execution_id: Uuid,
    node_id: NodeId,
  }),
  v.description('The event was kept: the node takes it as its value. The URL works no more (409 after).'),
);

/** What an asset input accepts: declared once, with the definition's input node. */
const assetRestrictions = ASSET_RESTRICTIONS;

/** The wait nodes an execution waits on that the reader may resume, each with its resume URL. */
const WaitingList = v.pipe(
  v.array(
    v.object({
      node_id: NodeId,
      resume_url: v.pipe(url, v.description("POST a JSON object here (no key): it becomes the wait node's value. Works once.")),
      expires_at: v.pipe(Timestamp, v.description('When the wait times out and the URL stops working.')),
    }),
  ),
  v.description(
    'Present while the execution waits for an event the reader may send: callers see the wait nodes the owner publishes visible, owners every one. POST the event to `resume_url`.',
  ),
);

const Accepted = v.object({
  status: v.literal('queued'),
  status_url: url,
  result_url: url,
  deployment_id: Uuid,
  execution_id: Uuid,
  waiting: v.optional(WaitingList),
});

const ExecutionStatusBody = v.object({
  status: ExecutionStatus,
  execution_id: Uuid,
  deployment_id: Uuid,
  result_url: url,
  created_at: Timestamp,
  started_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  completion_duration: v.pipe(
    duration,
    v.description('Milliseconds from started_at to completed_at (0 when cancelled before it started); null until terminal.'),
  ),
  error_message: nullableString,
  waiting: v.optional(WaitingList),
});

const RawOutputValue = v.pipe(
  v.strictObject({ value: RawValue, value_type: v.literal('RAW') }),
  v.description('A string, number or boolean output.'),
);
const AssetOutputValue = v.pipe(
  v.strictObject({
    value: v.pipe(
      url,
      v.description('A capability link serving the exact bytes (GET /v1/assets/{token}); minted afresh on each read of the result.'),
    ),
    value_type: v.literal('ASSET'),
    media_type: v.pipe(
      v.string(),
      v.description(
        'Sniffed from the bytes; the link serves them with it, `nosniff`, and as an attachment for anything a browser could run.',
      ),
    ),
    bytes: v.pipe(int(0), v.description('The size of the file.')),
    expires_at: v.pipe(Timestamp, v.description('When the link stops working; read the result again for a fresh one.')),
  }),
  v.description('A file output (an image, a video, ...): a link to it, never its bytes.'),
);
const AssetListOutputValue = v.pipe(
  v.strictObject({
    value: v.pipe(
      v.array(v.nullable(url)),
      v.description(
        'A capability link to each file, in order (a map\'s items); null where an item failed under `on_item_error: "skip"`. Minted afresh on each read.',
      ),
    ),
    value_type: v.literal('ASSET'),
    media_type: v.pipe(v.array(v.nullable(v.string())), v.description("Each file's media type, in the same order.")),
    bytes: v.pipe(v.array(v.nullable(int(0))), v.description("Each file's size, in the same order.")),
    expires_at: v.pipe(v.nullable(Timestamp), v.description('When the links stop working; null when the list holds no file.')),
  }),
  v.description("A list of files (a map's renders): the single file's fields, each a list in the files' order."),
);
const OutputValue = v.pipe(
  v.union([RawOutputValue, AssetOutputValue, AssetListOutputValue]),
  v.description('An output: RAW, ASSET (a link to a file), or ASSET as a list of links (a list of files).'),
);
const OwnerOutputAssets = v.pipe(
  v.nullable(v.record(v.string(), v.union([AssetOutputValue, AssetListOutputValue]))),
  v.description('Every ASSET output by id (hidden ones too) with a fresh link once completed; null before and otherwise.'),
);

const OutputArtifact = v.pipe(
  v.object({
    output: NodeId,
    url: v.pipe(url, v.description('A fresh capability link to the bytes, as in response_data.')),
    media_type: v.string(),
    bytes: int(0),
    index: v.optional(v.pipe(int(0), v.description('A file of a list output: its place in the list, from 0.'))),
  }),
  v.description('A file a web-form execution produced (a visible ASSET output; one entry per file of a list output).'),
);

const ExecutionResult = v.object({
  status: Terminal,
  execution_id: Uuid,
  deployment_id: Uuid,
  // A result exists only once terminal, so its duration is always known.
  completion_duration: v.pipe(int(0), v.description('Milliseconds from started_at to completed_at (0 when cancelled before it started).')),
  output_artifacts: v.pipe(
    v.array(OutputArtifact),
    v.description('Web-form executions: one entry per visible ASSET output once completed. Always empty for API executions.'),
  ),
  error_message: nullableString,
  response_data: v.pipe(v.record(v.string(), OutputValue), v.description('Visible outputs by id; `{}` unless completed.')),
});

/** The web form's execute request: what the page sends (no callback: a form cannot make the service call out). */
const FormExecutionRequest = v.pipe(
  v.strictObject({
    workflow_input: v.optional(v.pipe(WorkflowInput, v.description('Keyed by input id, as for callers.'))),
  }),
  v.description(
    'POST /v1/forms/{form_token}/executions: the visible inputs, as the execute route takes them; hidden inputs cannot be set.',
  ),
);
const FormAccepted = v.pipe(
  v.object({ status: v.literal('queued'), execution_id: Uuid, status_url: url }),
  v.description('Accepted: read status_url (with `Prefer: wait=N` to be answered when it finishes).'),
);
const FormExecution = v.pipe(
  v.object({
    status: ExecutionStatus,
    execution_id: Uuid,
    status_url: v.pipe(
      url,
      v.description("This execution under the form's link; readable through this link only (and with the deployment key)."),
    ),
    created_at: Timestamp,
    started_at: v.nullable(Timestamp),
    completed_at: v.nullable(Timestamp),
    completion_duration: duration,
    error_message: nullableString,
    output_artifacts: v.array(OutputArtifact),
    response_data: v.pipe(v.record(v.string(), OutputValue), v.description('Visible outputs by id; `{}` unless completed.')),
    waiting: v.optional(WaitingList),
  }),
  v.description("A web-form execution as the form's page reads it."),
);

/*
 * The events route (GET …/executions/{execution_id}/events/, functions/core/events.ts): each
 * server-sent event's `data`, by its `event` name. `done`'s data is the ExecutionResult.
 */
const StatusEvent = v.pipe(
  v.strictObject({ status: ExecutionStatus, at: Timestamp }),
  v.description('`event: status`: the execution as it moves (pending first, the terminal status last), with when.'),
);
const NodeEvent = v.pipe(
  v.union([
    v.strictObject({
      node_id: NodeId,
      type: v.picklist(NODE_TYPES),
      state: v.pipe(
        v.picklist(['started', 'waiting', 'polled', 'finished', 'failed', 'skipped', 'items']),
        v.description(
          "waiting: it waits in the state machine (a long delay, a job between polls, a wait node); polled: a job was polled again; skipped: its `if` was false or a node it reads was skipped (it never starts); items: a map's items ended so far (`items_done` of `items_total`).",
        ),
      ),
      at: Timestamp,
      duration_ms: v.optional(v.pipe(int(0), v.description('Finished and failed nodes: how long the node took.'))),
      items_done: v.optional(v.pipe(int(0), v.description('`items`: how many of the map\'s items have ended ("3 of 8 variants done").'))),
      items_total: v.optional(v.pipe(int(0), v.description('`items`: how many items the map has.'))),
    }),
    v.strictObject({
      done: v.pipe(int(1), v.description('Nodes finished (or failed) so far.')),
      total: v.pipe(int(1), v.description("The pipeline's node count.")),
    }),
  ]),
  v.description(
    '`event: node`: a node started, waited, was polled, finished, failed or was skipped, or a map counted its items; ids, types, times and counts only, never values. Hidden inputs and outputs never appear. A deployment published with `events.node_detail: false` sends only `{done, total}`, one event per node finished (or skipped).',
  ),
);
const WaitingEvent = v.pipe(
  v.strictObject({ waiting: WaitingList }),
  v.description(
    '`event: waiting`: a wait node the reader may resume began to wait (a caller: one the owner publishes visible). `waiting` lists every such node waiting then, each with its resume URL: POST the event there.',
  ),
);
const OutputEvent = v.pipe(
  v.union([
    v.strictObject({ output: v.string(), value: RawValue, value_type: v.literal('RAW') }),
    v.strictObject({
      output: v.string(),
      value: url,
      value_type: v.literal('ASSET'),
      media_type: v.string(),
      bytes: int(0),
      expires_at: Timestamp,
    }),
    v.strictObject({
      output: v.string(),
      value: v.array(v.nullable(url)),
      value_type: v.literal('ASSET'),
      media_type: v.array(v.nullable(v.string())),
      bytes: v.array(v.nullable(int(0))),
      expires_at: v.nullable(Timestamp),
    }),
  ]),
  v.description('`event: output`: a visible output once final, its id in `output` and the rest as in `response_data` (OutputValue).'),
);

/** The uploads route's request as documented; upload-request.ts parses it with its own messages. */
const UploadRequest = v.strictObject({
  media_type: v.pipe(
    v.string(),
    v.regex(MEDIA_TYPE_ANY_CASE),
    v.description("The file's media type, e.g. image/png (the bytes are sniffed again when the upload is used)."),
  ),
  bytes: v.pipe(int(1, UPLOAD_MAX_BYTES), v.description('The exact size of the file.')),
});

export const UploadAnswer = v.object({
  upload_url: v.pipe(url, v.description(`PUT the bytes here, before expires_at (${UPLOAD_URL_TTL_SECONDS / 60} minutes).`)),
  method: v.literal('PUT'),
  headers: v.pipe(
    v.record(v.string(), v.string()),
    v.description('Send exactly these headers with the PUT (its Content-Length is signed: any other size is refused).'),
  ),
  expires_at: Timestamp,
  asset: v.pipe(
    v.object({ value: v.pipe(v.string(), v.startsWith(UPLOAD_VALUE_PREFIX)), value_type: v.literal('ASSET') }),
    v.description(
      `Put this as the asset input's value once the bytes are there, within ${UPLOAD_USE_SECONDS / 3600} hours: in workflow_input (a deployment's upload) or a run's inputs (a pipeline's); it serves one execution of its deployment or pipeline.`,
    ),
  ),
});

const WaitField = v.object({
  value_type: v.picklist(WAIT_FIELD_TYPES),
  label: v.optional(v.string()),
  description: v.optional(v.string()),
});
/** A wait node as a contract shows it (functions/core/contract.ts ContractWait). */
const waitEntries = {
  id: NodeId,
  timeout_ms: v.pipe(int(1), v.description('How long the node waits for its event once it begins to wait.')),
  label: v.optional(v.string()),
  description: v.optional(v.string()),
  fields: v.optional(
    v.pipe(
      v.record(v.string(), WaitField),
      v.description('What the event holds: each field required, of its type, and no other. Absent: any JSON object.'),
    ),
  ),
};

const OutputKind = v.pipe(
  v.picklist(['RAW', 'ASSET']),
  v.description(
    'What the output answers: a value (RAW) or a file (ASSET), as in the run the contract was published from. Absent on contracts published before it was recorded: either.',
  ),
);
const OutputList = v.pipe(
  v.literal(true),
  v.description("An ASSET output whose value is a list of files (a map's): their links, in order."),
);
const OutputOptional = v.pipe(
  v.literal(true),
  v.description('May be absent from a completed result and its callback: every node it comes from may be skipped (conditions).'),
);
const CallerContract = v.object({
  deployment_id: Uuid,
  inputs: v.pipe(
    v.array(v.object({ id: NodeId, value_type: InputValueType, value: RawValue, ...assetRestrictions })),
    v.description('Visible inputs with their published values.'),
  ),
  outputs: v.pipe(
    v.array(
      v.object({ id: NodeId, value_type: v.optional(OutputKind), list: v.optional(OutputList), optional: v.optional(OutputOptional) }),
    ),
    v.description('Visible outputs.'),
  ),
  waits: v.pipe(
    v.array(v.object(waitEntries)),
    v.description(
      "Visible wait nodes: while an execution waits on one, its status (and result, events) carry `waiting` with the node's resume URL; POST the event there (`fields`, when given, say what it holds).",
    ),
  ),
});

const OpenApiDocument = v.pipe(
  v.looseObject({
    openapi: v.pipe(v.string(), v.regex(/^3\.1\.\d+$/)),
    info: v.looseObject({ title: v.string(), version: v.string() }),
    servers: v.optional(v.array(v.looseObject({ url: v.string() }))),
    // Path items are OpenAPI's own shape, not ours to restate.
    paths: v.pipe(v.record(v.string(), v.looseObject({})), v.description('Path items by path.')),
    components: v.optional(v.looseObject({})),
  }),
  v.description("An OpenAPI 3.1 document of one deployment's request and response."),
);

const GatewayError = v.pipe(
  v.strictObject({ error: v.picklist([ERRORS.InternalError.message, 'Gateway Timeout']), request_id: v.string() }),
  v.description('The gateway could not get an answer from the function (a crash or its time-out).'),
);

/* ------------------------------------------------------------------ owner shapes */

const WorkflowTypeShape = v.picklist(WORKFLOW_TYPES);
const ExecutionWorkflow = v.pipe(
  v.nullable(WorkflowTypeShape),
  v.description(
    "The state machine it runs on, decided when its version was pushed: express (ends within 170 s on AWS, at a dollar per million) or standard (may wait: polls, delays, events, up to its timeout_ms; stopped at once by a cancel). null on executions from before the choice was recorded. Owners' views only: callers' answers do not say.",
  ),
);
const PushResult = v.object({
  pipeline_id: PipelineId,
  version: int(1),
  created: v.boolean(),
  workflow: v.pipe(
    WorkflowTypeShape,
    v.description(
      "The state machine this version's executions run on, decided at its first push and kept with it: standard when a node may wait (a poll, a delay past a second, a wait for an event), its nodes one after another may take longer than an Express execution allows, or its timeout_ms is longer than that; express otherwise.",
    ),
  ),
  workflow_reason: v.pipe(v.string(), v.description('What decided it, in words.')),
  warnings: v.optional(
    v.pipe(
      v.array(Problem),
      v.minLength(1),
      v.description(
        'Present when the definition references owner secrets that are not set: each reference and where it is. Runs fail naming the secret until it is set.',
      ),
    ),
  ),
});

/** PUT /v1/secrets/{name}. The messages never repeat the value. */
export const SecretValue = v.strictObject(
  {
    value: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'must not be empty'),
      v.maxLength(OWNER_SECRET_MAX_LENGTH, `must be at most ${OWNER_SECRET_MAX_LENGTH} characters long`),
    ),
  },
  (issue) => (issue.expected === 'never' ? 'is not a known field; the body is {"value": "…"}' : 'is required: the body is {"value": "…"}'),
);
const SecretSummary = v.pipe(
  v.strictObject({ name: SecretName, updated_at: Timestamp }),
  v.description('An owner secret: its name and when it was last set. Its value is never returned.'),
);
const SecretList = v.strictObject({ secrets: v.array(SecretSummary) });

const PipelineSummary = v.object({
  pipeline_id: PipelineId,
  version: int(1),
  description: nullableString,
  deployment_id: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});
const PipelineList = v.object({ pipelines: v.pipe(v.array(PipelineSummary), v.description('Sorted by pipeline id.')) });
const Pipeline = v.object({
  pipeline_id: PipelineId,
  version: v.pipe(int(1), v.description('The latest version.')),
  description: nullableString,
  definition: PipelineDefinition,
  deployment_id: v.nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** POST /v1/pipelines/{id}/runs. */
export const RunRequest = v.strictObject({
  inputs: v.optional(
    v.pipe(
      v.record(v.string(), RawValue),
      v.description(
        "Overrides of input node values, by id. An asset input takes a data URI (at most 64 KiB decoded) or an upload's `upload:<id>` from `POST /v1/pipelines/{pipeline_id}/uploads`.",
      ),
    ),
  ),
});
const RunAccepted = v.object({
  run_id: Uuid,
  version: int(1),
  status: v.literal('pending'),
  status_url: url,
  waiting: v.optional(WaitingList),
});
const StoredValueFields = v.array(v.picklist(['inputs', 'outputs', 'error_message', 'trace', 'callback', 'visible_outputs']));
const valuesExpired = v.pipe(
  StoredValueFields,
  v.description(
    'Value fields whose stored copy has expired (values too large for the record live in the bucket for 8 days) or was deleted with the deployment: they read as empty ({} or null; an error message says so). Empty while every value is there.',
  ),
);
const Run = v.object({
  run_id: Uuid,
  pipeline_id: PipelineId,
  version: int(1),
  status: ExecutionStatus,
  inputs: v.pipe(v.record(v.string(), RawValue), v.description('The effective input values.')),
  outputs: v.pipe(
    v.nullable(v.record(v.string(), RawValue)),
    v.description('Every RAW output by id once completed; null before and otherwise.'),
  ),
  output_assets: OwnerOutputAssets,
  error_message: nullableString,
  values_expired: valuesExpired,
  created_at: Timestamp,
  started_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  completion_duration: duration,
  waiting: v.optional(WaitingList),
  workflow: ExecutionWorkflow,
});
const RunListItem = v.object({
  ...Run.entries,
  values_not_listed: v.pipe(
    StoredValueFields,
    v.description(
      'Value fields kept in storage (too large for the record) that a page of the list does not read: they show as empty here; GET the run for them.',
    ),
  ),
});
const nextCursor = v.pipe(nullableString, v.description('Pass as `cursor` for the next page; null on the last page.'));
const RunList = v.object({ runs: v.pipe(v.array(RunListItem), v.description('Newest first.')), next_cursor: nextCursor });

const DeliveryAttempt = v.object({
  at: Timestamp,
  duration_ms: int(0),
  status: v.pipe(nullableInt, v.description("The receiver's HTTP status; null when no answer came (see error).")),
  error: nullableString,
  redelivery: v.pipe(v.boolean(), v.description('Sent because the owner asked (redeliver), not by the retry schedule.')),
});
const CallbackDelivery = v.object({
  redelivery: v.pipe(v.boolean(), v.description("An owner's redelivery is owed (one attempt).")),
  log: v.pipe(v.array(DeliveryAttempt), v.description('The latest attempts (up to 20), oldest first; `attempts` counts them all.')),
  webhook_id: v.string(),
  attempts: int(0),
  outcome: v.picklist(CALLBACK_OUTCOMES),
  last_status: nullableInt,
  last_error: nullableString,
  last_attempt_at: v.nullable(Timestamp),
  next_attempt_at: v.nullable(Timestamp),
});
const NodeTrace = v.object({
  node: NodeId,
  type: v.picklist(NODE_TYPES),
  outcome: v.pipe(
    v.picklist(['completed', 'failed', 'stopped', 'not_run', 'skipped']),
    v.description(
      'stopped: the execution ended (failed elsewhere, timed out, cancelled) while this node was busy; not_run: it never started; skipped: its `if` was false, or a node it reads was skipped.',
    ),
  ),
  started_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  duration_ms: duration,
  error: v.pipe(nullableString, v.description('Why the node failed (redacted, at most 500 characters).')),
  http_status: v.pipe(nullableInt, v.description("An http node's upstream status, when it answered with one that failed the node.")),
  preview: v.pipe(
    nullableString,
    v.description("The node's value as JSON text, cut at 200 characters; owner secrets and credential-looking tokens are redacted."),
  ),
  item_errors: v.optional(
    v.pipe(
      v.array(v.object({ index: int(0), error: v.string() })),
      v.description('A map: the items that failed under `on_item_error: "skip"` (the first 20), their places in the list, and why.'),
    ),
  ),
});
const FailedNode = v.object({ node: NodeId, type: v.picklist(NODE_TYPES), error: nullableString, http_status: nullableInt });
const ExecutionSource = v.pipe(
  v.picklist(['api', 'form', 'mcp']),
  v.description("api: a caller with the key; form: the web form; mcp: an MCP client's tools/call, with the key."),
);
const ExecutionSummary = v.object({
  execution_id: Uuid,
  source: ExecutionSource,
  consumer_id: v.pipe(
    v.nullable(Uuid),
    v.description("The consumer whose key submitted it; null for the deployment's own key (and runs)."),
  ),
  status: ExecutionStatus,
  created_at: Timestamp,
  started_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  completion_duration: duration,
  error_message: nullableString,
  callback: v.pipe(
    v.nullable(
      v.object({ outcome: v.picklist(CALLBACK_OUTCOMES), attempts: int(0), last_status: nullableInt, last_error: nullableString }),
    ),
    v.description('How its callback went; null without one.'),
  ),
});
const ExecutionList = v.object({
  pipeline_id: PipelineId,
  deployment_id: Uuid,
  executions: v.pipe(v.array(ExecutionSummary), v.description('Newest first.')),
  next_cursor: nextCursor,
});
const UsageWindow = v.object({
  from: Timestamp,
  to: Timestamp,
  total: v.pipe(int(0), v.description('Finished executions in the window.')),
  by_status: v.object({ completed: int(0), failed: int(0), cancelled: int(0) }),
  by_source: v.pipe(
    v.object({ api: int(0), form: int(0), mcp: int(0) }),
    v.description("Finished executions by where they came from: the REST API, the web form, MCP clients' tools/call."),
  ),
  p50_ms: v.pipe(nullableInt, v.description('Upper bound (ms) of the duration bin holding the median; null without executions.')),
  p95_ms: v.pipe(nullableInt, v.description('Upper bound (ms) of the duration bin holding the 95th percentile; null without executions.')),
});
const CallerUsageWindow = v.object({
  accepted: v.pipe(int(0), v.description('Executions accepted (202 or a waited 200).')),
  refused_rate: v.pipe(int(0), v.description('Requests refused by the rate limit (429, any caller route).')),
  refused_quota: v.pipe(int(0), v.description('Submits refused by the quota (429).')),
  total: v.pipe(int(0), v.description('Executions finished (by their completion time).')),
  by_status: v.object({ completed: int(0), failed: int(0), cancelled: int(0) }),
  p50_ms: v.nullable(int(0)),
  p95_ms: v.nullable(int(0)),
});
const ConsumerUsage = v.object({
  consumer_id: v.pipe(v.nullable(Uuid), v.description("null: the deployment's own key (listed once it has limits and traffic).")),
  name: v.nullable(v.string()),
  last_hour: CallerUsageWindow,
  last_day: CallerUsageWindow,
});
const Usage = v.object({
  pipeline_id: PipelineId,
  deployment_id: Uuid,
  last_hour: UsageWindow,
  last_day: UsageWindow,
  by_consumer: v.pipe(v.array(ConsumerUsage), v.description('Each consumer (revoked ones included), over the same windows.')),
});
const OwnerExecution = v.object({
  hidden_inputs: v.pipe(v.array(NodeId), v.description('Input ids callers can neither see nor set (their published value was used).')),
  failed_node: v.pipe(v.nullable(FailedNode), v.description('The node whose failure ended the execution; null otherwise.')),
  trace: v.pipe(
    v.nullable(v.array(NodeTrace)),
    v.description('What every node did, in dependency order; null until the execution has run.'),
  ),
  trace_truncated: v.pipe(v.boolean(), v.description('Previews or errors were cut further to keep the record within its size limit.')),
  reruns: v.pipe(
    int(0),
    v.description('Times it ran again from the start after a crash of the local runtime interrupted it (always 0 on AWS).'),
  ),
  run_id: Uuid,
  execution_id: Uuid,
  kind: v.picklist(['run', 'api']),
  source: v.pipe(v.nullable(ExecutionSource), v.description("Where a deployment's execution came from; null for runs.")),
  pipeline_id: PipelineId,
  deployment_id: v.nullable(Uuid),
  consumer_id: v.pipe(
    v.nullable(Uuid),
    v.description("The consumer whose key submitted it; null for the deployment's own key (and runs)."),
  ),
  version: int(1),
  workflow: ExecutionWorkflow,
  status: ExecutionStatus,
  inputs: v.record(v.string(), RawValue),
  outputs: v.nullable(v.record(v.string(), RawValue)),
  output_assets: OwnerOutputAssets,
  visible_outputs: v.pipe(v.nullable(v.array(NodeId)), v.description('Output ids the caller sees; null for runs.')),
  error_message: nullableString,
  values_expired: valuesExpired,
  callback: v.pipe(nullableString, v.description('The callback URL without its query string.')),
  callback_delivery: v.nullable(CallbackDelivery),
  created_at: Timestamp,
  started_at: v.nullable(Timestamp),
  completed_at: v.nullable(Timestamp),
  completion_duration: duration,
  waiting: v.optional(WaitingList),
});
const ContractInput = v.object({ id: NodeId, value_type: InputValueType, value: RawValue, ...assetRestrictions, visible: v.boolean() });
const ContractOutput = v.object({
  id: NodeId,
  visible: v.boolean(),
  value_type: v.optional(OutputKind),
  list: v.optional(OutputList),
  optional: v.optional(OutputOptional),
});
const ContractWait = v.object({ ...waitEntries, visible: v.boolean() });
const Contract = v.object({ inputs: v.array(ContractInput), outputs: v.array(ContractOutput), waits: v.array(ContractWait) });
const RunSummary = v.object({ run_id: Uuid, status: ExecutionStatus, version: int(1) });
const FormView = v.object({ enabled: v.boolean(), title: nullableString, description: nullableString });
const EventsView = v.object({ node_detail: v.boolean() });
const deploymentEntries = {
  deployment_id: Uuid,
  version: int(1),
  published_at: Timestamp,
  execute_url: url,
  mcp_url: v.pipe(
    url,
    v.description(
      'The deployment as an MCP server (Streamable HTTP): point an MCP client here with `Authorization: Bearer <API key>`; its one tool runs the deployment.',
    ),
  ),
  form_url: v.pipe(
    v.nullable(url),
    v.description('The web form: anyone with this link can use the deployment in a browser; null without an enabled form.'),
  ),
  form: v.pipe(v.nullable(FormView), v.description("The web form's settings; null when it was never enabled.")),
  events: v.pipe(EventsView, v.description("What callers' event streams show of the nodes.")),
  inputs: v.array(ContractInput),
  outputs: v.array(ContractOutput),
  waits: v.pipe(
    v.array(ContractWait),
    v.description("Wait nodes: a visible one's resume URL reaches callers while an execution waits on it."),
  ),
};
const Deployment = v.object({ ...deploymentEntries, version: v.pipe(int(1), v.description('The published version.')) });
const apiKey = v.pipe(v.string(), v.regex(/^pgk_/));
const signingSecret = v.pipe(v.string(), v.regex(/^whsec_/));
const NewDeployment = v.pipe(
  v.object({
    ...deploymentEntries,
    api_key: v.pipe(apiKey, v.description('Shown this once; only its hash is stored.')),
    signing_secret: v.pipe(signingSecret, v.description('Signs callbacks; shown this once.')),
  }),
  v.description('The first publish: the deployment with its API key and callback signing secret.'),
);
const Readiness = v.object({
  pipeline_id: PipelineId,
  state: v.pipe(
    v.picklist(['run_required', 'not_published', 'live', 'needs_publish']),
    v.description(
      'run_required: no successful run. not_published: a successful run, no deployment. live: the latest finished run used the published version. needs_publish: it used another version.',
    ),
  ),
  publishable: v.boolean(),
  latest_run: v.nullable(RunSummary),
  counts: v.object({ inputs: int(0), outputs: int(0) }),
  published_at: v.nullable(Timestamp),
  discovered: v.nullable(Contract),
  deployment: v.nullable(Deployment),
});
/** POST …/deployment/keys. */
export const RotateRequest = v.strictObject({
  grace_seconds: v.optional(v.pipe(int(0, 7 * 24 * 3600), v.description('How long the old credential keeps working.')), 0),
  credential: v.optional(
    v.pipe(
      v.picklist(['api_key', 'signing_secret', 'form_link']),
      v.description('form_link: a new web-form link; the old one answers 404 at once (no grace period).'),
    ),
    'api_key',
  ),
});
const RotateResult = v.pipe(
  v.union([v.object({ api_key: apiKey }), v.object({ signing_secret: signingSecret }), v.object({ form_url: url })]),
  v.description('The new credential, shown this once.'),
);
/* ------------------------------------------------------------------ consumers */

const RateLimit = v.pipe(
  v.strictObject({
    requests: v.pipe(int(1, MAX_RATE_REQUESTS), v.description('Requests allowed per window.')),
    per_seconds: v.pipe(int(1, MAX_RATE_WINDOW_SECONDS), v.description('The window, in seconds (fixed windows aligned to the epoch).')),
  }),
  v.description('Every caller request spends one; over it: 429 with `Retry-After`.'),
);
const Quota = v.pipe(
  v.strictObject({
    executions: v.pipe(int(1, MAX_QUOTA_EXECUTIONS), v.description('Accepted executions allowed per period.')),
    per: v.pipe(v.picklist(['day', 'month']), v.description('The UTC day or calendar month; it refills at its start.')),
  }),
  v.description('Only accepted executions spend it, never reads; over it: 429 saying when it resets.'),
);
const ConsumerName = v.pipe(
  v.string(),
  v.regex(/\S/, 'name must not be blank'),
  v.maxLength(MAX_CONSUMER_NAME_LENGTH, `name must be at most ${MAX_CONSUMER_NAME_LENGTH} characters`),
);
// Every own key kept, `prototype` and `constructor` too (valibot's record drops them silently).
const ConsumerMetadata = v.pipe(
  ownRecord(
    v.pipe(v.string(), v.maxLength(64)),
    v.pipe(v.string(), v.maxLength(MAX_METADATA_VALUE_LENGTH, `metadata values must be at most ${MAX_METADATA_VALUE_LENGTH} characters`)),
  ),
  v.maxEntries(MAX_METADATA_ENTRIES, `metadata may have at most ${MAX_METADATA_ENTRIES} entries`),
  v.description(`Yours to keep (a customer id, a plan): at most ${MAX_METADATA_ENTRIES} string entries, never shown to the consumer.`),
);
const ExpiresAt = v.pipe(
  v.string(),
  v.isoTimestamp('expires_at must be an ISO 8601 timestamp with a time zone'),
  v.description('After this moment the key is refused (401 `key_expired`); null: never.'),
);
/** POST …/deployment/consumers. */
export const ConsumerCreate = v.strictObject({
  name: ConsumerName,
  rate_limit: v.optional(v.nullable(RateLimit), null),
  quota: v.optional(v.nullable(Quota), null),
  expires_at: v.optional(v.nullable(ExpiresAt), null),
  metadata: v.optional(ConsumerMetadata, {}),
});
/** PATCH …/deployment/consumers/{consumer_id}: only what is given changes; null removes a limit. */
export const ConsumerPatch = v.strictObject({
  name: v.optional(ConsumerName),
  rate_limit: v.optional(v.nullable(RateLimit)),
  quota: v.optional(v.nullable(Quota)),
  expires_at: v.optional(v.nullable(ExpiresAt)),
  metadata: v.optional(ConsumerMetadata),
});
/** PUT …/deployment/limits: the deployment key's own limits; what is absent or null is removed. */
export const KeyLimits = v.strictObject({
  rate_limit: v.optional(v.nullable(RateLimit), null),
  quota: v.optional(v.nullable(Quota), null),
});
const DeploymentKeyLimits = v.object({ deployment_id: Uuid, rate_limit: v.nullable(RateLimit), quota: v.nullable(Quota) });
/** POST …/deployment/consumers/{consumer_id}/keys. */
export const ConsumerRotate = v.strictObject({
  grace_seconds: v.optional(v.pipe(int(0, 7 * 24 * 3600), v.description('How long the old key keeps working.')), 0),
});
const consumerEntries = {
  consumer_id: Uuid,
  name: v.string(),
  status: v.pipe(v.picklist(['active', 'expired', 'revoked']), v.description('revoked: by DELETE; expired: past `expires_at`.')),
  key_prefix: v.pipe(v.string(), v.description("The key's first 12 and last 4 characters: tells keys apart, never usable.")),
  rate_limit: v.nullable(RateLimit),
  quota: v.nullable(Quota),
  expires_at: v.nullable(Timestamp),
  metadata: v.record(v.string(), v.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
  last_used_at: v.pipe(v.nullable(Timestamp), v.description('To the minute: written at most once a minute.')),
  revoked_at: v.nullable(Timestamp),
};
const Consumer = v.object(consumerEntries);
const NewConsumer = v.object({ ...consumerEntries, api_key: v.pipe(apiKey, v.description('Shown this once.')) });
const ConsumerList = v.object({ consumers: v.pipe(v.array(Consumer), v.description('Oldest first; revoked ones included.')) });
const ConsumerKey = v.object({ consumer_id: Uuid, api_key: v.pipe(apiKey, v.description('Shown this once.')) });

const Forbidden = v.pipe(
  v.strictObject({ error: v.string() }),
  v.description("AWS: API Gateway refused the owner's IAM signature (Forbidden, or the signature problem it found)."),
);

/**
 * Every named shape. A document carries only those its paths reach: the whole-service one
 * lists those of the caller routes first, then the rest, each group in this order
 * (openapi-shared.ts orderedSchemas). Add a shape anywhere here and reference it from a path
 * by name.
 */
export const SHAPES = {
  // Caller API.
  Uuid,
  Timestamp,
  NodeId,
  RawValue,
  InputValueType,
  ExecutionStatus,
  ExecutionRequest,
  InputValue,
  Accepted,
  ExecutionStatusBody,
  OutputValue,
  RawOutputValue,
  AssetOutputValue,
  AssetListOutputValue,
  OutputArtifact,
  ExecutionResult,
  StatusEvent,
  NodeEvent,
  WaitingEvent,
  OutputEvent,
  CallerContract,
  UploadRequest,
  UploadAnswer,
  OpenApiDocument,
  Unauthorized: errorBody(
    'Unauthorized',
    'Missing or refused credentials: for an API key, `reason` says which case it is and `detail` what to do; never which keys exist.',
    {
      // On AWS an owner route's IAM refusal is answered by the same ACCESS_DENIED response, whose
      // template can only substitute: there `reason` and `detail` are empty strings.
      reason: v.optional(
        v.pipe(
          v.union([v.picklist(Object.keys(KEY_REFUSALS) as [KeyRefusal, ...KeyRefusal[]]), v.literal('')]),
          v.description(`${KEY_REASON_DOC} Empty on an owner route refused by IAM (AWS only).`),
        ),
      ),
      detail: v.optional(v.union([Detail, v.literal('')])),
    },
  ),
  NotFoundDeployment: errorBody('DeploymentNotFound', 'Unknown or deleted deployment.'),
  NotFoundExecution: errorBody('ExecutionNotFound', 'Unknown or expired execution, or one of another deployment (or pipeline).'),
  InvalidInputStructure: errorBody(
    'InvalidInputStructure',
    'The body is not JSON, not an object, has an unknown field, or a malformed `workflow_input` or value object; also a malformed Idempotency-Key.',
    { detail: Detail },
  ),
  InvalidInput: errorBody(
    'InvalidInput',
    'Input id unknown or hidden, a value of the wrong type, a value_type that does not fit the input (REFERENCE for a RAW input or the reverse), a reference that is not an absolute http(s) URL or is refused by the address guard, an asset that is malformed, of a media type or size the input does not accept, or names an upload that is missing, expired, of another deployment, unfilled or used; or too many inputs.',
    { detail: Detail },
  ),
  MissingCallbackUrl: errorBody('MissingCallbackUrl', '`callback` present but null, empty or blank.', { detail: v.optional(Detail) }),
  InvalidCallbackUrl: errorBody('InvalidCallbackUrl', '`callback` not an absolute http(s) URL, or to a blocked address.', {
    detail: v.optional(Detail),
  }),
  IdempotencyKeyReused: errorBody('IdempotencyKeyReused', 'The same Idempotency-Key was used with a different body.', {
    detail: v.optional(Detail),
  }),
  PayloadTooLarge: errorBody(
    'PayloadTooLarge',
    'The body is larger than the limit (256 KiB by default; execution requests with inline ASSET values 4 MiB); `detail` names the limit and, for assets, the uploads route.',
    { detail: v.optional(Detail) },
  ),
  UnsupportedMediaType: errorBody('UnsupportedMediaType', 'A non-empty body with a content type other than JSON.', {
    detail: v.optional(Detail),
  }),
  ExecutionNotCompleted: errorBody('ExecutionNotCompleted', 'The result was fetched before the execution finished.', {
    status: v.picklist(['pending', 'running']),
    waiting: v.optional(WaitingList),
  }),
  ExecutionAlreadyFinished: errorBody('ExecutionAlreadyFinished', 'Cancel of an execution that already finished.', { status: Terminal }),
  TooManyRequests: errorBody(
    'TooManyRequests',
    "Throttled by the stage (AWS), or over the key's own limit: `limit` says which (`rate` or `quota`), `detail` the limit and when to retry; `Retry-After` carries the seconds.",
    {
      detail: v.optional(Detail),
      limit: v.optional(v.picklist(['rate', 'quota'])),
      retry_after: v.optional(v.pipe(int(1), v.description('Seconds until the limit allows again (the same as `Retry-After`).'))),
      resets_at: v.optional(v.pipe(Timestamp, v.description('quota: when the period ends and the quota refills.'))),
    },
  ),
  ServiceUnavailable: errorBody('ServiceUnavailable', 'The store is unreachable for a moment; retry after `Retry-After` seconds.', {
    detail: v.optional(Detail),
  }),
  InternalError: errorBody('InternalError', 'Anything unexpected. No internals are shown; `request_id` finds the log line.', {
    request_id: v.string(),
  }),
  GatewayError,
  // A deployment's MCP server (POST /v1/deployments/{deployment_id}/mcp).
  McpMessage,
  McpErrorAnswer,
  OriginRefused: errorBody(
    'Forbidden',
    "A browser's request from another origin (its `Origin` header): the MCP transport refuses those, against DNS rebinding.",
    { detail: Detail },
  ),
  McpMethodNotAllowed: errorBody('MethodNotAllowed', 'GET: the server is stateless and opens no server-initiated stream; POST messages.', {
    detail: Detail,
  }),
  // Owner API.
  NotFound: errorBody('RouteNotFound', 'Nothing is served at this path.'),
  // Asset links (GET /v1/assets/{token}): a caller route of the service, in no deployment's document.
  AssetNotFound: errorBody('AssetNotFound', 'No asset at this link: never issued or altered, its deployment deleted, or the object gone.', {
    detail: v.optional(Detail),
  }),
  AssetLinkExpired: errorBody('AssetLinkExpired', 'The link expired; read the result again for a fresh one.', {
    detail: v.optional(Detail),
    expired_at: Timestamp,
  }),
  RangeNotSatisfiable: errorBody('RangeNotSatisfiable', 'The range starts past the end.', { detail: v.optional(Detail) }),
  // A wait node's resume URL (POST /v1/resume/{token}): the URL is the capability; in no deployment's document.
  ResumeRequest,
  ResumeAccepted,
  ResumeNotFound: errorBody('ResumeNotFound', 'No wait behind this URL: never issued, altered, or of a node that is not a wait.', {
    detail: Detail,
  }),
  ResumeAlreadyUsed: errorBody('ResumeAlreadyUsed', 'An event was already posted to this URL: it works once.', { detail: Detail }),
  ResumeGone: errorBody(
    'ResumeGone',
    'The wait is over: the node timed out, or the execution ended (completed, failed, cancelled, or no longer kept).',
    { detail: Detail, status: v.optional(v.picklist(STATUSES)) },
  ),
  // Web forms (GET /v1/forms/{form_token}, …): the link is the capability; in no deployment's document.
  FormExecutionRequest,
  FormAccepted,
  FormExecution,
  FormNotFound: errorBody('FormNotFound', 'No form at this link: never issued or altered, rotated, disabled, or its deployment deleted.'),
  FormRateLimited: errorBody(
    'TooManyRequests',
    'Too many runs or uploads through this form link, or from this address, in the last minute; `detail` says which limit and when to try again (also `Retry-After`).',
    { detail: Detail },
  ),
  PipelineId,
  Problem,
  PipelineDefinition,
  Node,
  // Every node type's schema under its document name (InputNode, HttpNode, …): from the registry.
  ...NODE_SCHEMAS,
  PushResult,
  SecretName,
  SecretValue,
  SecretSummary,
  SecretList,
  PipelineSummary,
  PipelineList,
  Pipeline,
  RunRequest,
  RunAccepted,
  Run,
  RunList,
  DeliveryAttempt,
  CallbackDelivery,
  NodeTrace,
  FailedNode,
  ExecutionSummary,
  ExecutionList,
  UsageWindow,
  CallerUsageWindow,
  ConsumerUsage,
  Usage,
  OwnerExecution,
  ContractInput,
  ContractOutput,
  ContractWait,
  Contract,
  RunSummary,
  Deployment,
  NewDeployment,
  Readiness,
  FormOption,
  FormView,
  EventsOption,
  EventsView,
  PublishRequest,
  Visibility,
  RotateRequest,
  RotateResult,
  RateLimit,
  Quota,
  ConsumerCreate,
  ConsumerPatch,
  ConsumerRotate,
  Consumer,
  NewConsumer,
  ConsumerList,
  ConsumerKey,
  KeyLimits,
  DeploymentKeyLimits,
  Forbidden,
  NotFoundPipeline: errorBody('PipelineNotFound', 'No pipeline with this id.'),
  NotFoundRun: errorBody('RunNotFound', 'No run with this id in this pipeline.'),
  NotFoundSecret: errorBody('SecretNotFound', 'No owner secret with this name.'),
  NotFoundConsumer: errorBody('ConsumerNotFound', 'No consumer with this id in this deployment.'),
  InvalidDefinition: errorBody('InvalidDefinition', 'The definition (or the pipeline id) was refused; `detail` lists every problem.', {
    detail: Problems,
  }),
  InvalidRequest: errorBody('InvalidRequest', 'The request body or query was refused; `detail` lists every problem.', { detail: Problems }),
  ConfirmationRequired: errorBody('ConfirmationRequired', 'Delete without `?confirm=` naming the deployment id.', { detail: Detail }),
  PublishNoSuccessfulRun: errorBody(
    'PublishNoSuccessfulRun',
    'Publish refused: no run of this pipeline has succeeded. While a run is still going, `detail` says so and how to wait for it, and `latest_run` names it.',
    { detail: v.optional(Detail), latest_run: v.optional(RunSummary) },
  ),
  PublishLatestRunFailed: errorBody('PublishLatestRunFailed', 'Publish refused: the most recent finished run did not succeed.', {
    latest_run: RunSummary,
  }),
  PublishNoInputsOrOutputs: errorBody(
    'PublishNoInputsOrOutputs',
    'Publish refused: the version of the latest run has no Input and no Output nodes.',
  ),
  Conflict: errorBody('Conflict', 'A concurrent publish, rotation or delete changed the deployment; try again.', { detail: Detail }),
} as const;

export type ShapeName = keyof typeof SHAPES;
export type Shape<N extends ShapeName> = v.InferOutput<(typeof SHAPES)[N]>;
