/** The slice of a pino/Fastify logger the stores use; any pino logger fits. */
export interface StoreLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

export const silentLogger: StoreLogger = {
  info() {},
  warn() {},
};
