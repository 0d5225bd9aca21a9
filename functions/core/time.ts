/** Epoch seconds, the unit of every expiry attribute (DynamoDB TTL) and grace period. */
export const epochSeconds = (d: Date): number => Math.floor(d.getTime() / 1000);
