/** Pipeline ids (contract §2): they appear in URLs, so lower case, digits and dashes only. */
export const PIPELINE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Execution and deployment ids are UUIDs; anything else in their place names nothing. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_PATTERN.test(s);

/** Node ids: keys of a definition's `nodes`, of a request's inputs and of a result's outputs. */
export const NODE_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/**
 * `execution_id` is a key of the callback payload beside the output ids; `__proto__` would
 * turn into an object's prototype instead of a key wherever a definition is rebuilt.
 */
export const RESERVED_NODE_IDS: readonly string[] = ['execution_id', '__proto__'];
