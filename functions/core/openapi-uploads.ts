/**
 * The uploads route in the OpenAPI documents (service and per deployment): its request and
 * answer as JSON Schema. The shapes are declared with valibot beside the route
 * (functions/core/upload-request.ts); these say the same for the documents.
 */
import { UPLOAD_MAX_BYTES, UPLOAD_URL_TTL_SECONDS, UPLOAD_USE_SECONDS, UPLOAD_VALUE_PREFIX } from './assets';

type JsonSchema = Record<string, unknown>;

export const UPLOAD_SCHEMAS: Record<string, JsonSchema> = {
  UploadRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['media_type', 'bytes'],
    properties: {
      media_type: { type: 'string', description: "The file's media type, e.g. image/png (the bytes are sniffed again when the upload is used)." },
      bytes: { type: 'integer', minimum: 1, maximum: UPLOAD_MAX_BYTES, description: 'The exact size of the file.' },
    },
  },
  UploadAnswer: {
    type: 'object',
    required: ['upload_url', 'method', 'headers', 'expires_at', 'asset'],
    properties: {
      upload_url: { type: 'string', format: 'uri', description: `PUT the bytes here, before expires_at (${UPLOAD_URL_TTL_SECONDS / 60} minutes).` },
      method: { const: 'PUT' },
      headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Send exactly these headers with the PUT (its Content-Length is signed: any other size is refused).' },
      expires_at: { type: 'string', format: 'date-time' },
      asset: {
        type: 'object',
        required: ['value', 'value_type'],
        description: `Put this in workflow_input as the asset input's value once the bytes are there, within ${UPLOAD_USE_SECONDS / 3600} hours; it serves one execution.`,
        properties: { value: { type: 'string', pattern: `^${UPLOAD_VALUE_PREFIX}` }, value_type: { const: 'ASSET' } },
      },
    },
  },
};
