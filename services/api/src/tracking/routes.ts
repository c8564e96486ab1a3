import { isBotUserAgent, randomBase62, verifyTrackingToken } from '@tern/auth';
import { clickedEvent, openedEvent } from '@tern/domain';
import { httpError } from '@tern/http';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TAGS } from '../openapi.js';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';
import { errorResponse } from '../schemas.js';

/** The 1×1 transparent GIF of the open pixel. */
export const PIXEL_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const tokenParam = z.object({
  token: z
    .string()
    .min(1)
    // The router's MAX_PARAM_LENGTH (app.ts): a click token carries its URL.
    .max(8192)
    .meta({
      description: 'The signed token the sender put in the email (HMAC-SHA256 with TRACKING_SECRET).',
      example: 'eyJrIjoibyIsInQiOiJhY21lIiwiZSI6ImVtXzEifQ.3q2-7wAAAAAAAAAAAAAAAA',
    }),
});
// A Buffer is sent as is (Fastify serialises no Buffer); documented as a binary string.
const pixel = z
  .custom<Buffer>((v) => Buffer.isBuffer(v))
  .meta({
    type: 'string',
    format: 'binary',
    description: 'A 1×1 transparent GIF (`image/gif`, `Cache-Control: no-store`).',
    example: 'GIF89a… (43 bytes)',
  });
const redirect = z.null().meta({
  description: 'Redirect (`Location`) to the URL signed in the token; never to any other.',
});
const unknownLink = errorResponse(
  404,
  'The token is forged, altered, truncated or of the other kind: no event, no redirect.',
  'Not found',
);

/** No credential header: the signed token in the path is one. */
const TOKEN_CREDENTIAL = 'None: the signed token in the path is the credential (a forged one gets 404).';

export interface TrackingRoutesOptions extends ApiRouteDeps {
  sending: SendingDeps;
  /** TRACKING_SECRET: the key the tokens are signed with. */
  trackingSecret: string;
}

/**
 * Open pixel and click redirect (SPEC §11). Public: the HMAC token is the credential. A forged
 * or altered token → 404, no event, no redirect. Known scanners are recorded with `bot: true`
 * (not counted). Appending is best effort: the reader gets the pixel or the redirect even when
 * the log is down.
 */
export const trackingRoutes: FastifyPluginAsyncZod<TrackingRoutesOptions> = async (app, deps) => {
  const { sending, trackingSecret } = deps;

  async function record(
    type: 'email.opened' | 'email.clicked',
    tenantId: string,
    emailId: string,
    data: { url?: string; userAgent?: string; bot?: boolean },
    log: { warn(obj: object, msg?: string): void },
  ): Promise<void> {
    try {
      const input = { tenantId, emailId, at: deps.now(), nonce: randomBase62(16), ...data };
      await sending.log.append([
        type === 'email.opened' ? openedEvent(input) : clickedEvent({ ...input, url: data.url ?? '' }),
      ]);
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
    {
      // The URL carries a token (and a click's URL may carry personal data): keep it out of request logs.
      logLevel: 'warn',
      config: { rateLimit: false, publicCredential: TOKEN_CREDENTIAL },
      schema: {
        tags: [TAGS.tracking],
        operationId: 'trackOpen',
        summary: 'Open pixel',
        description:
          'Records `email.opened` (with the user agent; a known scanner’s is flagged `bot: true` and not counted) and ' +
          'answers the pixel. The sender puts it in HTML bodies when the tenant’s `tracking.opens` is on.',
        params: tokenParam,
        // No credential: the signed token in the path is one.
        security: [],
        response: {
          200: { description: 'The pixel.', content: { 'image/gif': { schema: pixel } } },
          404: unknownLink,
        },
      },
    },
    async (request, reply) => {
      const payload = verifyTrackingToken(trackingSecret, request.params.token, 'open');
      if (payload === null) throw httpError(404, 'Not found', { code: 'NOT_FOUND' });
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
    {
      logLevel: 'warn',
      config: { rateLimit: false, publicCredential: TOKEN_CREDENTIAL },
      schema: {
        tags: [TAGS.tracking],
        operationId: 'trackClick',
        summary: 'Click redirect',
        description:
          'Records `email.clicked` with the URL (a known scanner’s is flagged `bot: true` and not counted) and ' +
          'redirects to the URL signed in the token, so the link cannot be turned into an open redirect. The sender ' +
          'rewrites `http(s)` links of HTML bodies through it when the tenant’s `tracking.clicks` is on.',
        params: tokenParam,
        // No credential: the signed token in the path is one.
        security: [],
        response: { 302: redirect, 404: unknownLink },
      },
    },
    async (request, reply) => {
      const payload = verifyTrackingToken(trackingSecret, request.params.token, 'click');
      if (payload === null || payload.kind !== 'click')
        throw httpError(404, 'Not found', { code: 'NOT_FOUND' });
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
