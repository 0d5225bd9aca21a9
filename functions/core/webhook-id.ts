/** The Standard Webhooks message id: one per execution, so every retry carries the same id. */
export function webhookIdFor(executionId: string): string {
  return `msg_${executionId.replace(/-/g, '')}`;
}
