// What the ingest service's read-your-writes tests share: the query API and ingest, both on the
// same log, listening on loopback ports.
import type { FastifyInstance } from 'fastify';
import type { SendingWorld } from '../../api/test/sending-support.js';
import { createIngestApp } from '../src/index.js';

const urlOf = (app: FastifyInstance) => {
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
};

/** The ingest app on `world`'s log (accepting `token`), and both it and the world's api listening. */
export async function listenWithIngest(world: SendingWorld, token: string) {
  const ingest = await createIngestApp({ log: world.log, ingestToken: token });
  await Promise.all([
    world.app.listen({ port: 0, host: '127.0.0.1' }),
    ingest.listen({ port: 0, host: '127.0.0.1' }),
  ]);
  return { ingest, apiUrl: urlOf(world.app), ingestUrl: urlOf(ingest) };
}
