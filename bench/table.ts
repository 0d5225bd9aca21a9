/** Plain-text tables: the terminal output and the Markdown of docs/performance.md. */

export type Row = string[];

export function textTable(header: Row, rows: Row[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: Row) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function markdownTable(header: Row, rows: Row[]): string {
  const esc = (c: string) => c.replace(/\|/g, '\\|');
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}
