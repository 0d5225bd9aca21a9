/**
 * What a route is: how it is served and what its operation says (the OpenAPI documents are
 * built from it, openapi-shared.ts). The table itself is lib/routes.ts; the domain holds only
 * the shape of an entry, so that core builds documents from whatever routes it is handed and
 * imports nothing from lib/.
 */
import type { ShapeName } from './shapes';

export type RouteAuth = 'apiKey' | 'owner' | 'none';
export type HttpVerb = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A component schema: a shape (functions/core/shapes.ts), or the submit's finished answer derived from one. */
export type SchemaName = ShapeName | 'ExecutionFinished';
/** A parameter (functions/core/openapi-shared.ts PARAMETERS): the components by name, the rest written in place. */
export type ParameterName =
  | 'DeploymentId'
  | 'ExecutionId'
  | 'IdempotencyKey'
  | 'PreferWait'
  | 'PipelineId'
  | 'RunId'
  | 'SecretName'
  | 'ConsumerId'
  | 'LastEventId'
  | 'PageLimit'
  | 'PageCursor'
  | 'Confirm'
  | 'StatusFilter'
  | 'Since'
  | 'DocsAsset'
  | 'FormToken'
  | 'FormAsset'
  | 'AssetToken'
  | 'ResumeToken'
  | 'Range';
/** A response header (functions/core/openapi-shared.ts HEADERS). */
export type HeaderName =
  | 'Location'
  | 'PreferenceApplied'
  | 'RetryAfterPoll'
  | 'RetryAfterLimit'
  | 'NoStore'
  | 'ContentLength'
  | 'ContentDisposition'
  | 'NoSniff'
  | 'ContentRange'
  | 'ApiKeyChallenge'
  | 'BearerChallenge'
  | 'RetryAfterKeyLimit'
  | 'RetryAfterOutage'
  | 'RateLimitPolicy'
  | 'RateLimit'
  | 'Allow';
/** A response shared by several routes (the documents' `components.responses`). */
export type ResponseName = 'DeploymentNotFound' | 'ExecutionNotFound' | 'PayloadTooLarge' | 'PipelineNotFound';

/** One answer of a route: a shared response by name, or its own. */
export type Answer =
  | ResponseName
  | {
      description: string;
      /** The JSON body's shape; several: one of them (`oneOf`, or `anyOf` with `overlapping`). */
      shape?: SchemaName | readonly SchemaName[];
      overlapping?: true;
      /**
       * A body that is not JSON: an HTML page, the docs or form page's script or style sheet, a
       * file's own bytes; `mcp`: JSON-RPC answers, one JSON message or a `text/event-stream` of them.
       */
      media?: 'html' | 'file' | 'bytes' | 'mcp';
      /** A server-sent event stream whose `done` event holds this shape. */
      events?: SchemaName;
      /** The headers it carries: true when always present. */
      headers?: Partial<Record<HeaderName, boolean>>;
    };

export interface Route<H extends string = string> {
  method: HttpVerb;
  /** API Gateway style path, parameters in braces; a trailing slash is always optional. */
  path: string;
  /** Folder under functions/ holding handler.ts. */
  handler: H;
  auth: RouteAuth;
  /** Honours `Prefer: wait=N`: may hold the request open until the execution finishes. */
  waits?: true;
  /**
   * Takes inline ASSET values: bodies up to the inline limit (functions/core/assets.ts
   * INLINE_ASSET_BODY_MAX_BYTES) reach the handler, which counts all but those values against
   * the usual limit (the rule: functions/core/body-size.ts).
   */
  inlineAssets?: true;
  /**
   * The answer streams (API Gateway `ResponseTransferMode: STREAM`, a Lambda streaming handler
   * written with `streamedHttpHandler`): bodies of any size pass through in chunks, never held
   * whole, and binary needs no binary media types. Bounded by STREAMED_ROUTE_TIMEOUT_SECONDS.
   */
  streams?: true;
  /**
   * The route's operation in the OpenAPI documents (functions/core/openapi-shared.ts
   * routePaths): tag and security follow from `auth` and the path; every route also answers
   * 429/500/503/5XX, and 401 (and 403 for owners) when it takes credentials.
   */
  operationId: string;
  summary: string;
  description?: string;
  /** In the order documented; path parameters included. */
  params?: readonly ParameterName[];
  body?: { shape: SchemaName; optional?: true; description?: string };
  answers: Readonly<Record<string, Answer>>;
}
