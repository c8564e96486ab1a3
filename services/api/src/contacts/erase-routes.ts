import { eraseContactBodySchema, erasureResultSchema } from '@tern/contracts';
import type { Keyring } from '@tern/privacy';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialOf } from '../credentials.js';
import { KEY_OR_DASHBOARD, TAGS } from '../openapi.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errors } from '../schemas.js';
import { eraseRecipient } from './erase.js';

export interface EraseRoutesOptions extends Pick<ApiRouteDeps, 'now' | 'pool' | 'readModel'> {
  keyring: Keyring;
  /**
   * When the scrub runs once more (default 45 s): another process may still hold the erased key
   * in its cache (≤ 30 s) and project an in-flight event with it; the second pass removes what it
   * wrote, inside the 60 s budget of SPEC §14.
   */
  rescrubAfterMs?: number;
}

export const DEFAULT_RESCRUB_AFTER_MS = 45_000;

/** `POST /contacts/erase` (SPEC §14): erasure of an address in the tenant, surviving replays. */
export const eraseRoutes: FastifyPluginAsyncZod<EraseRoutesOptions> = async (app, deps) => {
  const timers = new Set<NodeJS.Timeout>();
  app.addHook('onClose', async () => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
  });

  app.post(
    '/contacts/erase',
    {
      config: { auth: 'jwt_or_key', scope: 'contacts:write' },
      schema: {
        tags: [TAGS.contacts],
        operationId: 'eraseContact',
        summary: 'Erase an address (right to erasure)',
        description:
          'Erases every personal datum of the address in the tenant: its contact (and audience memberships), ' +
          'the recipient, subject and content of its emails in the delivery log (they read `null`), sandbox ' +
          'messages, webhook delivery records. The event log keeps these fields only encrypted under a key ' +
          'per recipient, which is deleted: a rebuild from the log cannot bring them back. Counts and analytics ' +
          'stay as they were. The address stays suppressed as a keyed hash only: a later send to it is ' +
          'suppressed. 202 with what was erased; a repeat answers 200 with nothing left to do (all counts 0). ' +
          'Every instance stops using the erased key within 30 s; the scrub runs again after 45 s. ' +
          'A project-bound key gets 403: the erasure reaches every project.',
        security: KEY_OR_DASHBOARD,
        body: eraseContactBodySchema,
        response: {
          200: erasureResultSchema.meta({ description: 'Already erased: nothing left to do.' }),
          202: erasureResultSchema,
          400: errors.badRequest('body.email: email must be a valid email address'),
          401: errors.unauthorized,
          403: errors.forbiddenScope,
        },
      },
    },
    async (request, reply) => {
      const { tenantId } = credentialOf(request);
      const { email } = request.body;
      const log = (error: unknown) =>
        app.log.error({ err: error, tenantId }, 'erasure: rewriting data_keys failed (the rescrub retries)');
      // The pool, not a repository: the erasure is one transaction across the tables of every owner
      // (contacts, the email log, the timeline, suppressions, the keyring's data keys).
      const { firstTime, ...result } = await eraseRecipient(deps.pool, deps.keyring, tenantId, email, {
        log,
      });
      deps.readModel.changed({ kind: 'logs', tenants: [tenantId] });
      const touched = Object.values(result.counts).some((n) => n > 0);
      const timer = setTimeout(() => {
        timers.delete(timer);
        eraseRecipient(deps.pool, deps.keyring, tenantId, email, { rewriteKeys: true, log })
          .then(() => deps.readModel.changed({ kind: 'logs', tenants: [tenantId] }))
          .catch((error: unknown) => app.log.error({ err: error, tenantId }, 'erasure rescrub failed'));
      }, deps.rescrubAfterMs ?? DEFAULT_RESCRUB_AFTER_MS);
      timer.unref();
      timers.add(timer);
      // The audit record: the keyed hash only (erased_recipients holds it with the time).
      request.log.info(
        { recipientHash: deps.keyring.recipientHash(tenantId, email), counts: result.counts },
        'contact.erased',
      );
      return reply.status(firstTime || touched ? 202 : 200).send(result);
    },
  );
};
