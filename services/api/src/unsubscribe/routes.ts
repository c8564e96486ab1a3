import { createHash } from 'node:crypto';
import type { Preferences } from '@tern/bulk';
import { MIN_TRACKING_SECRET_LENGTH, verifyUnsubscribeToken } from '@tern/domain';
import { httpError } from '@tern/http';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TAGS } from '../openapi.js';
import type { ApiRouteDeps } from '../route-deps.js';
import { errorResponse } from '../schemas.js';

/** The largest body a one-click POST may carry (`List-Unsubscribe=One-Click` is 26 bytes). */
const MAX_BODY_BYTES = 8 * 1024;

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:10vh auto;padding:0 1rem;color:#1a1a1a}' +
  'button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:.4rem;background:#1a1a1a;color:#fff;cursor:pointer}' +
  'button:focus-visible{outline:3px solid #5b8def;outline-offset:2px}';
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/**
 * No script, inline style allowed by its hash only, the form may post only here, the page may not
 * be framed (no clickjacked unsubscribes); no referrer, since the URL carries the token.
 */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
  `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">` +
  `<title>${title}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;

const confirmPage = (email: string) =>
  page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1><p>Stop receiving these emails at <strong>${escapeHtml(email)}</strong>?</p>` +
      // The same body a mail client sends for RFC 8058 one-click, so both take one path.
      `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">` +
      `<button type="submit">Unsubscribe</button></form>`,
  );

/**
 * The preference page (SPEC §27): the tenant's public topics as checkboxes (checked: receives it),
 * saved by a POST to `/u/:token/preferences`; below, the one-click form that leaves everything.
 */
const preferencePage = (email: string, prefs: Preferences, token: string, saved: boolean) =>
  page(
    'Email preferences',
    `<h1>Email preferences</h1><p>Choose what <strong>${escapeHtml(email)}</strong> receives.</p>` +
      (saved ? '<p role="status">Your preferences are saved.</p>' : '') +
      `<form method="post" action="/u/${encodeURIComponent(token)}/preferences"><fieldset><legend>Topics</legend>` +
      prefs.topics
        .map(
          (t) =>
            `<p><label><input type="checkbox" name="topic" value="${escapeHtml(t.id)}"${t.subscribed ? ' checked' : ''}> ` +
            `${escapeHtml(t.name)}</label></p>`,
        )
        .join('') +
      `</fieldset><p><button type="submit">Save preferences</button></p></form>` +
      `<h2>Unsubscribe from everything</h2>` +
      `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">` +
      `<button type="submit">Unsubscribe from all</button></form>`,
  );

const donePage = (email: string) =>
  page(
    'Unsubscribed',
    `<h1>You are unsubscribed</h1><p><strong>${escapeHtml(email)}</strong> will not receive these emails any more.</p>`,
  );

const tokenParams = z.object({
  token: z.string().min(1).max(2048).meta({ description: 'The signed token of the List-Unsubscribe link.' }),
});
const html = z.string().meta({
  description: 'An HTML page (text/html).',
  example: '<!doctype html><html lang="en">…<form method="post"><button>Unsubscribe</button></form>…</html>',
});
const unknownLink = errorResponse(
  404,
  'The token is forged, altered or truncated.',
  'Unknown unsubscribe link',
);

export interface UnsubscribeRoutesOptions extends Pick<ApiRouteDeps, 'now' | 'unsubscribes'> {
  /** TRACKING_SECRET: the key the tokens are signed with. */
  trackingSecret: string;
  /** The keyring's keyed hash: a link of an erased address writes nothing in clear. */
  recipientHash?: (tenantId: string, email: string) => string;
}

/**
 * `GET /u/:token` (a confirmation page whose button POSTs) and `POST /u/:token` (RFC 8058 one
 * click; also what the page's button sends). Only the POST changes anything: link scanners and
 * prefetchers follow GET links, and must never unsubscribe anyone.
 */
/** No credential header: the signed token in the path is one. */
const TOKEN_CREDENTIAL = 'None: the signed token in the path is the credential (a forged one gets 404).';

/**
 * The options of a route of the link: the token in the path (no credential: the signed token is
 * one), an HTML page or 404, and no request line below warn (the URL carries a token that can
 * unsubscribe someone: kept out of request logs).
 */
const pageRoute = (doc: { operationId: string; summary: string; description: string }) => ({
  logLevel: 'warn' as const,
  config: { publicCredential: TOKEN_CREDENTIAL },
  schema: {
    tags: [TAGS.unsubscribe],
    ...doc,
    params: tokenParams,
    response: {
      200: { description: 'The page.', content: { 'text/html': { schema: html } } },
      404: unknownLink,
    },
    security: [],
  },
});

export const unsubscribeRoutes: FastifyPluginAsyncZod<UnsubscribeRoutesOptions> = async (app, deps) => {
  if (deps.trackingSecret.length < MIN_TRACKING_SECRET_LENGTH) {
    throw new Error(`trackingSecret must be at least ${MIN_TRACKING_SECRET_LENGTH} characters`);
  }
  // Mail clients post `List-Unsubscribe=One-Click` as a form (urlencoded or multipart), browsers
  // the page's form: whatever the type, the body says nothing the token does not, so it is read
  // (bounded) and dropped.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, _body, done) =>
    done(null, undefined),
  );

  const claimsOf = (token: string) => {
    const claims = verifyUnsubscribeToken(deps.trackingSecret, token);
    if (claims === null) throw httpError(404, 'Unknown unsubscribe link', { code: 'NOT_FOUND' });
    return claims;
  };
  const sendPage = (reply: FastifyReply, body: string) => reply.headers(PAGE_HEADERS).send(body);

  app.get(
    '/u/:token',
    pageRoute({
      operationId: 'showUnsubscribePage',
      summary: 'Unsubscribe confirmation page',
      description:
        'An HTML page naming the address, with one button that POSTs to the same URL. Changes nothing by ' +
        'itself (link scanners follow GET links). No script; a strict Content-Security-Policy.',
    }),
    async (request, reply) => {
      const { token } = request.params;
      const claims = claimsOf(token);
      const prefs = await deps.unsubscribes.preferences(claims.tenantId, claims.email);
      // No contact, or no public topic: nothing to choose, the plain confirmation.
      if (prefs === null || prefs.topics.length === 0) return sendPage(reply, confirmPage(claims.email));
      return sendPage(reply, preferencePage(claims.email, prefs, token, false));
    },
  );

  // The preference form (SPEC §27): an urlencoded body of the checked topics, in a context of its
  // own so that this route alone reads a body.
  await app.register(async (plugin) => {
    const form = plugin.withTypeProvider<ZodTypeProvider>();
    form.removeAllContentTypeParsers();
    form.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: MAX_BODY_BYTES },
      (_request, body, done) => done(null, { topic: new URLSearchParams(String(body)).getAll('topic') }),
    );
    form.post(
      '/u/:token/preferences',
      pageRoute({
        operationId: 'savePreferences',
        summary: 'Save topic preferences',
        description:
          'The preference page’s form (`application/x-www-form-urlencoded`, one `topic` field per checked ' +
          'topic id): every public topic of the tenant is set to `opt_in` when checked, `opt_out` otherwise. ' +
          'Leaves `subscribed` alone (a contact unsubscribed from all stays so). Answers the page again.',
      }),
      async (request, reply) => {
        const { token } = request.params;
        const claims = claimsOf(token);
        // The parser above hands `{ topic: [...] }` (or nothing): bounded like any form of the page.
        const chosen = ((request.body as { topic?: string[] } | undefined)?.topic ?? [])
          .filter((t) => t.length <= 200)
          .slice(0, 100);
        await deps.unsubscribes.savePreferences(claims.tenantId, claims.email, chosen, deps.now());
        const prefs = await deps.unsubscribes.preferences(claims.tenantId, claims.email);
        if (prefs === null || prefs.topics.length === 0) return sendPage(reply, confirmPage(claims.email));
        return sendPage(reply, preferencePage(claims.email, prefs, token, true));
      },
    );
  });

  app.post(
    '/u/:token',
    pageRoute({
      operationId: 'unsubscribe',
      summary: 'Unsubscribe (one click)',
      description:
        'RFC 8058 one-click unsubscribe (body `List-Unsubscribe=One-Click`, any content type; the body is not ' +
        'needed). The tenant’s contact with that address gets `subscribed: false` and the address joins the ' +
        'suppression list (`reason: "unsubscribed"`). Idempotent. Answers 200 with a confirmation page.',
    }),
    async (request, reply) => {
      const claims = claimsOf(request.params.token);
      await deps.unsubscribes.unsubscribe(
        claims.tenantId,
        claims.email,
        deps.now(),
        claims.source,
        deps.recipientHash,
      );
      return sendPage(reply, donePage(claims.email));
    },
  );
};
