import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP, dashboardRoutes } from '../src/index.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function build(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tern-dash-'));
  dirs.push(dir);
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), body);
  }
  return dir;
}

async function app(dir: string) {
  const a = Fastify();
  await a.register(dashboardRoutes, { dir });
  return a;
}

describe('dashboardRoutes', () => {
  const dir = build({
    'index.html':
      '<!doctype html><title>Tern</title><script type="module" src="/assets/index-abc123.js"></script>',
    'assets/index-abc123.js': 'console.log(1)',
    'assets/index-abc123.js.map': '{}',
    'assets/index-def456.css': 'body{}',
    'favicon.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
  });

  it('GET / answers the page under a strict CSP, revalidated on every load', async () => {
    const a = await app(dir);
    const res = await a.inject({ url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<title>Tern</title>');
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("default-src 'none'");
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
    expect(DASHBOARD_CSP).toContain("frame-ancestors 'none'");
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
  });

  it('hashed assets are immutable for a year; other files revalidate', async () => {
    const a = await app(dir);
    const js = await a.inject({ url: '/assets/index-abc123.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.body).toBe('console.log(1)');
    const css = await a.inject({ url: '/assets/index-def456.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const icon = await a.inject({ url: '/favicon.svg' });
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const a = await app(dir);
    const first = await a.inject({ url: '/' });
    const again = await a.inject({ url: '/', headers: { 'if-none-match': first.headers.etag as string } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const stale = await a.inject({ url: '/', headers: { 'if-none-match': '"other"' } });
    expect(stale.statusCode).toBe(200);
  });

  it('serves no source map and no file outside the build', async () => {
    const a = await app(dir);
    expect((await a.inject({ url: '/assets/index-abc123.js.map' })).statusCode).toBe(404);
    expect((await a.inject({ url: '/assets/../index.html' })).statusCode).not.toBe(500);
    expect((await a.inject({ url: '/assets/nope.js' })).statusCode).toBe(404);
  });

  it('without a build, GET / answers 503 naming the command', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'tern-dash-empty-'));
    dirs.push(empty);
    const a = await app(empty);
    const res = await a.inject({ url: '/' });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
  });
});
