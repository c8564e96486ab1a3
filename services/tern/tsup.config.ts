import { defineConfig } from 'tsup';

// One bundle per entry: the workspace packages (@tern/*, TypeScript sources) are inlined, every
// npm dependency stays an import resolved from node_modules at run time (native chDB, PGlite's
// wasm files, kafkajs…).
export default defineConfig({
  entry: ['src/main.ts', 'src/rebuild.ts', 'src/reproject.ts', 'src/seed-demo.ts', 'src/mcp.ts'],
  format: ['esm'],
  platform: 'node',
  target: 'node24',
  outDir: 'dist',
  clean: true,
  sourcemap: true,
  splitting: false,
  dts: false,
  noExternal: [/^@tern\//],
  esbuildPlugins: [
    {
      name: 'external-npm-packages',
      setup(build) {
        build.onResolve({ filter: /^[^./]/ }, (args) =>
          args.path.startsWith('@tern/') ? undefined : { path: args.path, external: true },
        );
      },
    },
  ],
});
