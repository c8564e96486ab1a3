import { defineConfig } from 'vite';

// The dashboard is a static build served by Tern itself (`src/index.ts`): no dev server in
// production, no CDN, no inline script or style (the page runs under a strict CSP).
export default defineConfig({
  root: 'web',
  publicDir: '../public',
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    // Inlined assets would become data: URLs; keep every asset a file under /assets/.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
