/** Pipeline ids (contract §2): they appear in URLs, so lower case, digits and dashes only. */
export const PIPELINE_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;
