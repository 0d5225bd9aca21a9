/**
 * Media type rules that both the service and the web form's page (functions/browser, bundled
 * for the browser) apply: no imports, no Node built-ins.
 */

/** Whether `mediaType` is one of `accepted` (exact, or `type/*`); no list accepts everything. */
export function acceptsMediaType(accepted: readonly string[] | undefined, mediaType: string): boolean {
  if (accepted === undefined || accepted.length === 0) return true;
  return accepted.some((a) => (a.endsWith('/*') ? mediaType.startsWith(a.slice(0, -1)) : a === mediaType));
}
