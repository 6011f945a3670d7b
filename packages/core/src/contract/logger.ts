/**
 * Where library code reports what it does. agent-computer never writes to the
 * console itself; pass a logger to see its messages. Fields must never hold
 * secrets (keys, tokens, capability URLs, cookies, passwords).
 */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The default logger: drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
