/**
 * The one logger type of Tern's packages and services: the slice of pino they call. Any pino or
 * Fastify logger fits. A part that calls fewer levels still takes a `Logger` (the silent one
 * below when none is given). Never log a secret or a personal datum (docs/architecture.md).
 */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** A logger that drops everything: the default of parts started without one (tests, tools). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
