/**
 * The input value types, in a module of their own so that the web form's browser script
 * (functions/browser) can name them without loading the rest of types.ts.
 *
 * `reference`: an absolute http(s) URL, sent by callers as value_type REFERENCE; nodes see the string.
 * `asset`: a file (image, video, ...), sent by callers as value_type ASSET; its current value in
 * a definition is a base64 data URI.
 */
export type InputValueType = 'string' | 'integer' | 'float' | 'boolean' | 'reference' | 'asset';
