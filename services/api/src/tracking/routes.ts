import { isBotUserAgent, randomBase62, verifyTrackingToken } from '@tern/auth';
import { type DeliveryEvent, deliveryEventSchema } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';

/** The 1×1 transparent GIF of the open pixel. */
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const tokenParam = z.object({ token: z.string().min(1).max(8192) });

/**
 * Open pixel and click redirect (SPEC §11). Public: the HMAC token is the credential. A forged
 * or altered token → 404, no event, no redirect. Known scanners are recorded with `bot: true`
 * (not counted). Appending is best effort: the reader gets the pixel or the redirect even when
 * the log is down.
 */
export const trackingRoutes: FastifyPluginAsyncZod<ApiRouteDeps & { sending: SendingDeps }> = async (
  app,
  deps,
) => {
  const { sending } = deps;

  async function record(
    type: 'email.opened' | 'email.clicked',
    tenantId: string,
    emailId: string,
    data: Record<string, unknown>,
    log: { warn(obj: object, msg?: string): void },
  ): Promise<void> {
    try {
      const event: DeliveryEvent = deliveryEventSchema.parse({
        id: `${emailId}:${type === 'email.opened' ? 'open' : 'click'}:${randomBase62(16)}`,
        type,
        tenantId,
        emailId,
        occurredAt: deps.now().toISOString(),
        data,
      });
      await sending.log.append([{ key: emailId, value: JSON.stringify(event) }]);
    } catch (error) {
      log.warn({ err: error, type }, 'tracking event not recorded');
    }
  }

  const agent = (ua: string | undefined) => {
    const userAgent = ua?.slice(0, 1000);
    return {
      ...(userAgent ? { userAgent } : {}),
      ...(isBotUserAgent(userAgent) ? { bot: true } : {}),
    };
  };

  app.get(
    '/t/o/:token',
    { config: { rateLimit: false }, schema: { hide: true, params: tokenParam } },
    async (request, reply) => {
      const payload = verifyTrackingToken(sending.trackingSecret, request.params.token, 'open');
      if (payload === null) throw httpError(404, 'Not found');
      await record(
        'email.opened',
        payload.tenantId,
        payload.emailId,
        agent(request.headers['user-agent']),
        request.log,
      );
      return reply
        .header('content-type', 'image/gif')
        .header('cache-control', 'no-store, max-age=0')
        .send(PIXEL_GIF);
    },
  );

  app.get(
    '/t/c/:token',
    { config: { rateLimit: false }, schema: { hide: true, params: tokenParam } },
    async (request, reply) => {
      const payload = verifyTrackingToken(sending.trackingSecret, request.params.token, 'click');
      if (payload === null || payload.kind !== 'click') throw httpError(404, 'Not found');
      await record(
        'email.clicked',
        payload.tenantId,
        payload.emailId,
        { url: payload.url.slice(0, 4000), ...agent(request.headers['user-agent']) },
        request.log,
      );
      return reply.header('cache-control', 'no-store').redirect(payload.url, 302);
    },
  );
};
