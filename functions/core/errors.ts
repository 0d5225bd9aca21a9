/**
 * The one error catalog. Every handler maps failures through it, so the status and body a
 * user sees are decided here and nowhere else (contract §5 and the owner errors of 7).
 */
export const ERRORS = {
  ExecutionNotCompleted: { status: 409, message: 'Execution not completed' },
  ExecutionAlreadyFinished: { status: 409, message: 'Execution already finished' },
  Unauthorized: { status: 401, message: 'Unauthorized' },
  Forbidden: { status: 403, message: 'Forbidden' },
  DeploymentNotFound: { status: 404, message: 'Deployment Not Found' },
  ExecutionNotFound: { status: 404, message: 'Execution Not Found' },
  PipelineNotFound: { status: 404, message: 'Pipeline Not Found' },
  RunNotFound: { status: 404, message: 'Run Not Found' },
  SecretNotFound: { status: 404, message: 'Secret Not Found' },
  ConsumerNotFound: { status: 404, message: 'Consumer Not Found' },
  AssetNotFound: { status: 404, message: 'Asset Not Found' },
  FormNotFound: { status: 404, message: 'Form Not Found' },
  AssetLinkExpired: { status: 410, message: 'Asset Link Expired' },
  ResumeNotFound: { status: 404, message: 'Resume URL Not Found' },
  ResumeAlreadyUsed: { status: 409, message: 'Resume URL Already Used' },
  ResumeGone: { status: 410, message: 'Resume URL Gone' },
  RangeNotSatisfiable: { status: 416, message: 'Range Not Satisfiable' },
  RouteNotFound: { status: 404, message: 'Not Found' },
  MethodNotAllowed: { status: 405, message: 'Method Not Allowed' },
  // The gateway's own answers to a request it cannot read: a path that is not percent-encoded
  // UTF-8, a request line or headers past the server's limit.
  BadRequest: { status: 400, message: 'Bad Request' },
  RequestHeaderFieldsTooLarge: { status: 431, message: 'Request Header Fields Too Large' },
  InvalidInputStructure: { status: 400, message: 'Invalid Input Structure' },
  InvalidInput: { status: 422, message: 'Invalid Input' },
  MissingCallbackUrl: { status: 400, message: 'Missing Callback URL' },
  InvalidCallbackUrl: { status: 422, message: 'Invalid Callback URL' },
  PayloadTooLarge: { status: 413, message: 'Payload Too Large' },
  UnsupportedMediaType: { status: 415, message: 'Unsupported Media Type' },
  IdempotencyKeyReused: { status: 422, message: 'Idempotency Key Reused' },
  TooManyRequests: { status: 429, message: 'Too Many Requests' },
  InvalidDefinition: { status: 400, message: 'Invalid Pipeline Definition' },
  InvalidRequest: { status: 400, message: 'Invalid Request' },
  PublishNoSuccessfulRun: {
    status: 409,
    message: 'To deploy the workflow, there must be at least one successful execution.',
  },
  PublishLatestRunFailed: {
    status: 409,
    message: 'The latest run failed; run the pipeline again until a run succeeds before publishing.',
  },
  PublishNoInputsOrOutputs: {
    status: 409,
    message: 'The pipeline has no Input and no Output nodes; add such nodes and run it again before publishing.',
  },
  ConfirmationRequired: { status: 400, message: 'Confirmation Required' },
  Conflict: { status: 409, message: 'Conflict' },
  ServiceUnavailable: { status: 503, message: 'Service Unavailable' },
  InternalError: { status: 500, message: 'Internal Error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorName = keyof typeof ERRORS;

/**
 * What a 401 tells the client to send. It names the accepted forms only, never which part of
 * a credential was wrong (that would help someone guessing keys). Plain data: the local
 * gateway and the stack's gateway responses both read it. No `$` or `#`: API Gateway reads
 * gateway response bodies as templates.
 */
export const UNAUTHORIZED_DETAIL = {
  apiKey: "send the deployment's API key as 'X-API-Key: <key>' or 'Authorization: Api-Key <key>'",
  ownerToken:
    "owner routes need 'Authorization: Bearer <owner token>': the token the local runtime printed at start (also in its data dir, file owner-token)",
  ownerSigV4: 'owner routes need an AWS SigV4 signature (pipegate signs with your AWS credentials)',
} as const;

export const unauthorizedBody = (kind: keyof typeof UNAUTHORIZED_DETAIL): ErrorBody => ({
  error: ERRORS.Unauthorized.message,
  detail: UNAUTHORIZED_DETAIL[kind],
});

/**
 * Why a caller's API key was refused: the `reason` of a 401, with a `detail` that says what to
 * do. Each case is one the holder of that very key can tell apart anyway, so none says which
 * keys or deployments exist: a well-formed key for a deployment that does not exist is
 * `unknown`, exactly as one that never matched. Plain data read by the authorizer (its Deny
 * context reaches the caller through the ACCESS_DENIED gateway response, which substitutes
 * the text into a JSON string: hence no `"`, `\\`, `$` or `#`) and by the handlers.
 */
export const KEY_REFUSALS = {
  missing: `no API key was sent: ${UNAUTHORIZED_DETAIL.apiKey}`,
  wrong_scheme:
    "the Authorization header uses another scheme (Bearer, Basic or none): send 'Authorization: Api-Key <key>' or 'X-API-Key: <key>'",
  two_keys: 'the request carries more than one API key (X-API-Key and Authorization, or either header twice): send one',
  malformed: 'this is not a pipegate API key (they start with pgk_ and end with a checksum): check that it was copied whole',
  unknown: "this API key is not valid: check it, or ask the deployment's owner for the current key",
  revoked: "this API key was replaced by a key rotation and no longer works: ask the deployment's owner for the current key",
  expired: "this API key's grace period after a key rotation has ended: use the current key",
  other_deployment: "this API key belongs to another deployment: use this deployment's own key",
  key_expired: "this API key has expired (its owner gave it an end date): ask the deployment's owner for a new key or a later date",
  consumer_revoked: "this API key was revoked by the deployment's owner: ask the owner for a new key",
} as const;

export type KeyRefusal = keyof typeof KEY_REFUSALS;

/** A caller's 401 from a handler, in the same shape as the authorizer's (ACCESS_DENIED). */
export const keyRefused = (reason: KeyRefusal): AppError =>
  new AppError('Unauthorized', KEY_REFUSALS[reason], { reason }, { headers: { 'www-authenticate': 'Api-Key' } });

export type ErrorBody = { error: string; detail?: unknown } & Record<string, unknown>;

/** A failure the user should see, carrying its catalog entry and any named fields. */
export class AppError extends Error {
  readonly status: number;
  readonly fields: Record<string, unknown>;
  /** Response headers that belong with this answer (e.g. `Retry-After` on a 409 result). */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorName,
    readonly detail?: unknown,
    fields: Record<string, unknown> = {},
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(ERRORS[code].message, options);
    this.name = 'AppError';
    this.status = ERRORS[code].status;
    this.fields = fields;
    this.headers = options?.headers ?? {};
  }

  body(): ErrorBody {
    const body: ErrorBody = { error: ERRORS[this.code].message };
    if (this.detail !== undefined) body.detail = this.detail;
    return { ...body, ...this.fields };
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** The status and body for any thrown value; unexpected ones become 500 without internals. */
export function toErrorResponse(e: unknown, requestId: string): { status: number; body: ErrorBody } {
  if (isAppError(e)) return { status: e.status, body: e.body() };
  return { status: 500, body: { error: ERRORS.InternalError.message, request_id: requestId } };
}
