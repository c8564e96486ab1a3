import { createHash } from 'node:crypto';
import { classifyOpen, isBotUserAgent, randomBase62, verifyTrackingToken } from '@tern/auth';
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
      description:
        'The opaque token the sender put in the email (AES-256-GCM under a key derived from TRACKING_SECRET; links of mail sent before v2, HMAC-SHA256 signed, are still accepted).',
      example: 'AlZ8ZrK7Rwq1jd_rTxZoTbmPVV_bEDNX1U101n9ccQjWsw8EevqnKM0OWmG60JLW',
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

/**
 * The `Location` of a signed URL: a header carries only visible ASCII, so a URL with other
 * characters (`/€`, `?q=日本`, an IDN host) is written as a browser would request it — WHATWG
 * serialisation (percent-encoded UTF-8, punycode host). A URL the parser refuses keeps its text
 * with every byte outside visible ASCII percent-encoded, so the header is always valid.
 */
export function locationOf(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url.replace(/[^\x21-\x7e]+/g, (run) =>
      [...Buffer.from(run, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
    );
  }
}

/** No credential header: the signed token in the path is one. */
const TOKEN_CREDENTIAL = 'None: the signed token in the path is the credential (a forged one gets 404).';

export interface TrackingRoutesOptions extends Pick<ApiRouteDeps, 'now' | 'pool' | 'readModel'> {
  sending: SendingDeps;
  /** TRACKING_SECRET: the key the tokens are signed with. */
  trackingSecret: string;
  /** OPEN_DEDUP_SECONDS: one open per email and reader within this window; 0 → every fetch. Default 3600. */
  openDedupSeconds?: number;
}

/** Most (email, reader) pairs an instance remembers; past it the oldest are forgotten first. */
export const OPEN_DEDUP_MAX_ENTRIES = 100_000;

/**
 * "Was this open already counted?" — one open per email and reader (client address + User-Agent)
 * within `windowMs`. Keys are SHA-256 digests (no address kept in memory in clear); the map is
 * insertion-ordered, so expired and, past `maxEntries`, oldest entries go first. Per process: behind
 * several API instances a reader may be counted once per instance.
 */
export function createOpenDedup(windowMs: number, maxEntries = OPEN_DEDUP_MAX_ENTRIES) {
  const seen = new Map<string, number>();
  return {
    /** True the first time within the window (record it), false for a replay. */
    first(parts: readonly string[], nowMs: number): boolean {
      if (windowMs <= 0) return true;
      const key = createHash('sha256').update(parts.join('\u0000')).digest('base64url');
      const until = seen.get(key);
      if (until !== undefined && until > nowMs) return false;
      seen.delete(key);
      for (const [k, expiry] of seen) {
        if (expiry > nowMs && seen.size < maxEntries) break;
        seen.delete(k);
      }
      seen.set(key, nowMs + windowMs);
      return true;
    },
    get size() {
      return seen.size;
    },
  };
}

/**
 * Open pixel and click redirect (SPEC §11). Public: the HMAC token is the credential. A forged
 * or altered token → 404, no event, no redirect. Known scanners are recorded with `bot: true`
 * (not counted). Appending is best effort: the reader gets the pixel or the redirect even when
 * the log is down.
 */
export const trackingRoutes: FastifyPluginAsyncZod<TrackingRoutesOptions> = async (app, deps) => {
  const { sending, trackingSecret } = deps;
  const opens = createOpenDedup((deps.openDedupSeconds ?? 3600) * 1000);

  async function record(
    type: 'email.opened' | 'email.clicked',
    tenantId: string,
    emailId: string,
    data: { url?: string; userAgent?: string; bot?: boolean; machine?: boolean },
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
          'Records `email.opened` with the user agent and answers the pixel. Gmail’s image proxy is a reader’s ' +
          'open; Apple Mail Privacy Protection’s prefetch (user agent `Mozilla/5.0`, or an address in 17.0.0.0/8) ' +
          'and security scanners are machine opens, recorded with `machine: true` and counted apart ' +
          '(`machineOpened`), never in `opened`. A replay by the same reader (address and User-Agent) within ' +
          '`OPEN_DEDUP_SECONDS` is not recorded again. The sender puts it in HTML bodies when the tenant’s ' +
          '`tracking.opens` is on.',
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
      const reader = [payload.tenantId, payload.emailId, request.ip, request.headers['user-agent'] ?? ''];
      if (opens.first(reader, deps.now().getTime())) {
        // Who opened it (SPEC §21, `classifyOpen`): a machine open is recorded with `machine: true`.
        const userAgent = request.headers['user-agent']?.slice(0, 1000);
        const machine = classifyOpen({ userAgent, ip: request.ip }) === 'machine';
        await record(
          'email.opened',
          payload.tenantId,
          payload.emailId,
          { ...(userAgent ? { userAgent } : {}), ...(machine ? { machine: true } : {}) },
          request.log,
        );
      }
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
      return reply.header('cache-control', 'no-store').redirect(locationOf(payload.url), 302);
    },
  );
};
