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

export function createLogger(service = 'pipegate', sink: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Logger {
  const write = (level: string, message: string, fields?: LogFields) =>
    sink(JSON.stringify({ level, time: new Date().toISOString(), service, message, ...fields }));
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export const errorFields = (e: unknown): LogFields =>
  e instanceof Error ? { error_name: e.name, error_message: e.message } : { error_message: String(e) };
