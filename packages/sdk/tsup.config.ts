import { defineConfig } from 'tsup';

// The SDK is the one package published to npm, so its build must stand alone: @tern/contracts is
// a private workspace package whose types are only imported with `import type` — esbuild drops
// them from the JS, and `dts.resolve` folds whatever declarations are needed into index.d.ts (the
// zod-free `@tern/contracts/wire` and `/event-types` through the `paths` of tsconfig.build.json).
export default defineConfig({
  entry: { index: 'src/index.ts' },
  tsconfig: 'tsconfig.build.json',
  format: ['esm', 'cjs'],
  target: 'node18',
  platform: 'neutral',
  dts: { resolve: true },
  noExternal: ['@tern/contracts'],
  sourcemap: true,
  clean: true,
  treeshake: true,
  splitting: false,
  outDir: 'dist',
  outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.js' }),
});
