import type { EventStream } from '@tern/event-log';
import { FRAMEWORK_ERRORS, installErrorHandlers, ONE_REQUEST_LINE, registerHealthRoutes } from '@tern/http';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { ingestRoutes } from './ingest-routes.js';

export interface IngestAppOptions {
  log: EventStream;
  ingestToken: string;
  logger?: FastifyServerOptions['logger'];
  onAccepted?: (count: number) => void;
}

/** The ingest service alone (split mode and tests): errors, health, readiness, `POST /events`. */
export async function createIngestApp(opts: IngestAppOptions) {
  const app = Fastify({ ...ONE_REQUEST_LINE, ...FRAMEWORK_ERRORS, logger: opts.logger ?? false });
  installErrorHandlers(app);
  registerHealthRoutes(app, [{ name: 'event-log', check: () => opts.log.ping() }]);
  await app.register(ingestRoutes, {
    log: opts.log,
    ingestToken: opts.ingestToken,
    onAccepted: opts.onAccepted,
  });
  return app;
}
