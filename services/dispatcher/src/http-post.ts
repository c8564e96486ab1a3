import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isForbiddenAddress } from '@tern/webhooks';

/** Outcome of one HTTP attempt. `statusCode` null = no answer (timeout, refused, blocked). */
export interface PostResult {
  statusCode: number | null;
  durationMs: number;
  /** Null on a 2xx; otherwise why the attempt counts as failed. */
  error: string | null;
  /** First ≤ 1 KiB of the answer body, as UTF-8. */
  responseExcerpt: string | null;
}

export const RESPONSE_EXCERPT_BYTES = 1024;

/**
 * POSTs one delivery. A 2xx within `timeoutMs` (connect, send, answer and body excerpt) is a
 * success; a 3xx is a failure (redirects are never followed: the target is the URL the tenant
 * registered); addresses are re-checked at connection time unless `allowPrivate`.
 */
export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  opts: { timeoutMs: number; allowPrivate: boolean },
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: Omit<PostResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, durationMs: elapsed() });
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      finish({ statusCode: null, error: 'invalid url', responseExcerpt: null });
      return;
    }
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    // An IP literal skips DNS, so the connect-time lookup guard would not see it.
    if (!opts.allowPrivate && isIP(host) && isForbiddenAddress(host)) {
      finish({
        statusCode: null,
        error: 'forbidden address (private, loopback or link-local)',
        responseExcerpt: null,
      });
      return;
    }
    if (target.protocol !== 'https:' && !(opts.allowPrivate && target.protocol === 'http:')) {
      finish({ statusCode: null, error: 'url scheme not allowed', responseExcerpt: null });
      return;
    }
    const client = target.protocol === 'https:' ? https : http;
    const request = client.request(target, {
      method: 'POST',
      agent: false,
      lookup: guardedLookup(opts.allowPrivate),
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'Tern-Webhooks/1.0',
      },
    });
    timer = setTimeout(() => {
      finish({ statusCode: null, error: `timeout after ${opts.timeoutMs} ms`, responseExcerpt: null });
      request.destroy();
    }, opts.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => {
      const message =
        error.code === 'EWEBHOOKFORBIDDEN'
          ? 'forbidden address (private, loopback or link-local)'
          : `${error.code ?? 'error'}: ${error.message}`.slice(0, 500);
      finish({ statusCode: null, error: message, responseExcerpt: null });
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let kept = 0;
      const done = () => {
        const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
        const ok = status >= 200 && status < 300;
        finish({
          statusCode: status,
          error: ok
            ? null
            : status >= 300 && status < 400
              ? `redirect ${status} not followed`
              : `HTTP ${status}`,
          responseExcerpt: excerpt === '' ? null : excerpt,
        });
        response.destroy();
      };
      response.on('data', (chunk: Buffer) => {
        if (kept < RESPONSE_EXCERPT_BYTES) {
          chunks.push(chunk);
          kept += chunk.length;
        }
        // Enough for the excerpt: stop reading a large answer.
        if (kept >= RESPONSE_EXCERPT_BYTES) done();
      });
      response.on('end', done);
      response.on('error', done);
    });
    request.end(body);
  });
}
