/** What the service's own pages (the docs page, the web form) share. */

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/**
 * A page's opening up to its own links: UTF-8, a phone-sized viewport, no referrer (a page
 * whose URL is a capability must not leak it), the title escaped, and an empty icon so the
 * browser asks for no /favicon.ico.
 */
export const pageStart = (title: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">`;
