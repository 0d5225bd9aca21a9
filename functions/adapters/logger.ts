/**
 * Structured JSON logs, one line each. Callers pass fields, never request bodies, keys or
 * secrets: nothing here inspects what it is given.
 */
export type LogFields = Record<string, unknown>;
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * `json`: one object a line, for machines (CloudWatch, a log shipper). `text`: one short line
 * for a person at a terminal; a request reads `12:04:05 POST /v1/pipelines/x/runs 202 14 ms`.
 */
export type LogFormat = 'json' | 'text';

export function createLogger(
  service = 'pipegate',
  sink: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
  format: LogFormat = 'json',
): Logger {
  const write = (level: string, message: string, fields?: LogFields) =>
    sink(
      format === 'text'
        ? textLine(level, message, fields ?? {})
        : JSON.stringify({ level, time: new Date().toISOString(), service, message, ...fields }),
    );
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export const errorFields = (e: unknown): LogFields =>
  e instanceof Error ? { error_name: e.name, error_message: e.message } : { error_message: String(e) };

function textLine(level: string, message: string, fields: LogFields): string {
  const time = new Date().toISOString().slice(11, 19);
  if (message === 'request' && typeof fields.method === 'string') {
    const { method, path, route, status, duration_ms: ms, cause } = fields;
    const where = typeof path === 'string' ? path : String(route ?? '?');
    return `${time} ${method} ${where} ${String(status)} ${typeof ms === 'number' ? Math.round(ms) : '?'} ms${cause === undefined ? '' : ` (${String(cause)})`}`;
  }
  const rest = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${time} ${level === 'info' ? '' : `${level}: `}${message}${rest ? ` ${rest}` : ''}`;
}
