import type { EventStream } from '@tern/event-log';
import { installErrorHandlers, registerHealthRoutes, TERN_FASTIFY_OPTIONS } from '@tern/http';
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
  const app = Fastify({ ...TERN_FASTIFY_OPTIONS, logger: opts.logger ?? false });
  installErrorHandlers(app);
  registerHealthRoutes(app, [{ name: 'event-log', check: () => opts.log.ping() }]);
  await app.register(ingestRoutes, {
    log: opts.log,
    ingestToken: opts.ingestToken,
    onAccepted: opts.onAccepted,
  });
  return app;
}
