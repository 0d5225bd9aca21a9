/** Pipeline ids (contract §2): they appear in URLs, so lower case, digits and dashes only. */
export const PIPELINE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Execution and deployment ids are UUIDs; anything else in their place names nothing. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_PATTERN.test(s);
