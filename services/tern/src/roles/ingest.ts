import { ConfigError } from '@tern/config';
import { ingestRoutes } from '@tern/ingest';
import type { FastifyInstance } from 'fastify';
import { type RuntimeContext, streamOf } from '../context.js';

/** The ingest role: `POST /events` on this process's HTTP server, each batch appended to the log. */
export async function startIngest(ctx: RuntimeContext, app: FastifyInstance): Promise<void> {
  if (!ctx.secrets.ingestToken)
    throw new ConfigError('INGEST_TOKEN is required to run ingest', ['INGEST_TOKEN']);
  await app.register(ingestRoutes, {
    log: streamOf(ctx),
    ingestToken: ctx.secrets.ingestToken,
    onAccepted: (n) => ctx.metrics.eventsIngested.inc(n),
  });
}
