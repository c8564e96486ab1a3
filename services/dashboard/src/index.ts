import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';

/**
 * The dashboard's Content-Security-Policy: everything from Tern itself, nothing inline, no
 * plugin, no framing. `frame-src 'self'` admits the sandboxed `srcdoc` frames that show an email's
 * HTML (they inherit this policy, so remote images and scripts in mail stay blocked);
 * `img-src data:` admits the inline images that mail previews may carry.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
  cacheControl: string;
}

export interface DashboardOptions {
  /** The build output of `vite build` (`services/dashboard/dist`). */
  dir: string;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Every file of the build, read once at start (a few hundred KiB): no disk access per request. */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const path of walk(dir)) {
    const url = `/${relative(dir, path).split(sep).join('/')}`;
    if (url.endsWith('.map')) continue;
    const body = readFileSync(path);
    assets.set(url, {
      body,
      type: TYPES[extname(path)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      // Vite names every file under /assets/ by its content hash: it never changes, so it is
      // cached for a year; the page and the few unhashed files are revalidated on every load.
      cacheControl: url.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  return assets;
}

function send(reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) {
  reply
    .header('content-security-policy', DASHBOARD_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', asset.cacheControl)
    .header('etag', asset.etag);
  if (ifNoneMatch === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

/**
 * `GET /` and the dashboard's assets (SPEC §18). The page is static: it talks to the public API
 * with the user's JWT like any other client. Without a build it answers 503 naming the command.
 */
export const dashboardRoutes: FastifyPluginAsync<DashboardOptions> = async (app, opts) => {
  const built = existsSync(join(opts.dir, 'index.html'));
  const assets = built ? loadAssets(opts.dir) : new Map<string, Asset>();
  if (!built) app.log.warn({ dir: opts.dir }, 'dashboard not built: GET / answers 503 (run npm run build)');

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const index = assets.get('/index.html');
    if (!index) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The dashboard is not built: run `npm run build`.\n');
    }
    return send(reply, index, request.headers['if-none-match']);
  });

  for (const [url, asset] of assets) {
    if (url === '/index.html') continue;
    app.get(url, { schema: { hide: true } }, async (request, reply) =>
      send(reply, asset, request.headers['if-none-match']),
    );
  }
};
