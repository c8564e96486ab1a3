import { signTrackingToken } from '@tern/auth';
import type { TrackingSettings } from '@tern/contracts';

export interface TrackingContext {
  secret: string;
  /** PUBLIC_URL without a trailing slash. */
  publicUrl: string;
  tenantId: string;
  emailId: string;
}

// href="http…" or href='http…' in an HTML tag; other schemes (mailto:, tel:, #) are left alone.
const LINK = /(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2/gi;

const decodeEntities = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');

/**
 * Adds tracking to an HTML body (SPEC §11): every `http(s)` link of an `<a href>` goes through
 * `GET /t/c/:token` (the token signs the original URL), and a 1×1 pixel `GET /t/o/:token` is put
 * before `</body>` (or at the end). Text bodies are never changed.
 */
export function applyTracking(html: string, settings: TrackingSettings, ctx: TrackingContext): string {
  let out = html;
  if (settings.clicks) {
    out = out.replace(LINK, (_all, prefix: string, quote: string, url: string) => {
      const token = signTrackingToken(ctx.secret, {
        kind: 'click',
        tenantId: ctx.tenantId,
        emailId: ctx.emailId,
        url: decodeEntities(url),
      });
      return `${prefix}${quote}${ctx.publicUrl}/t/c/${token}${quote}`;
    });
  }
  if (settings.opens) {
    const token = signTrackingToken(ctx.secret, {
      kind: 'open',
      tenantId: ctx.tenantId,
      emailId: ctx.emailId,
    });
    const pixel = `<img src="${ctx.publicUrl}/t/o/${token}" width="1" height="1" alt="" style="display:none;border:0" />`;
    const close = out.search(/<\/body\s*>/i);
    out = close === -1 ? `${out}${pixel}` : `${out.slice(0, close)}${pixel}${out.slice(close)}`;
  }
  return out;
}
