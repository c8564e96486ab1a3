// tsup.config.ts
import { defineConfig } from "tsup";
var tsup_config_default = defineConfig({
  entry: ["src/main.ts", "src/rebuild.ts", "src/seed-demo.ts"],
  format: ["esm"],
  platform: "node",
  target: "node20",
  outDir: "dist",
  clean: true,
  sourcemap: true,
  splitting: false,
  dts: false,
  noExternal: [/^@tern\//],
  esbuildPlugins: [
    {
      name: "external-npm-packages",
      setup(build) {
        build.onResolve(
          { filter: /^[^./]/ },
          (args) => args.path.startsWith("@tern/") ? void 0 : { path: args.path, external: true }
        );
      }
    }
  ]
});
export {
  tsup_config_default as default
};
//# sourceMappingURL=data:application/json;base64,ewogICJ2ZXJzaW9uIjogMywKICAic291cmNlcyI6IFsidHN1cC5jb25maWcudHMiXSwKICAic291cmNlc0NvbnRlbnQiOiBbImNvbnN0IF9faW5qZWN0ZWRfZmlsZW5hbWVfXyA9IFwiL3dvcmsvd3QtZmxvdzI1L3NlcnZpY2VzL3Rlcm4vdHN1cC5jb25maWcudHNcIjtjb25zdCBfX2luamVjdGVkX2Rpcm5hbWVfXyA9IFwiL3dvcmsvd3QtZmxvdzI1L3NlcnZpY2VzL3Rlcm5cIjtjb25zdCBfX2luamVjdGVkX2ltcG9ydF9tZXRhX3VybF9fID0gXCJmaWxlOi8vL3dvcmsvd3QtZmxvdzI1L3NlcnZpY2VzL3Rlcm4vdHN1cC5jb25maWcudHNcIjtpbXBvcnQgeyBkZWZpbmVDb25maWcgfSBmcm9tICd0c3VwJztcblxuLy8gT25lIGJ1bmRsZSBwZXIgZW50cnk6IHRoZSB3b3Jrc3BhY2UgcGFja2FnZXMgKEB0ZXJuLyosIFR5cGVTY3JpcHQgc291cmNlcykgYXJlIGlubGluZWQsIGV2ZXJ5XG4vLyBucG0gZGVwZW5kZW5jeSBzdGF5cyBhbiBpbXBvcnQgcmVzb2x2ZWQgZnJvbSBub2RlX21vZHVsZXMgYXQgcnVuIHRpbWUgKG5hdGl2ZSBjaERCLCBQR2xpdGUnc1xuLy8gd2FzbSBmaWxlcywga2Fma2Fqc1x1MjAyNikuXG5leHBvcnQgZGVmYXVsdCBkZWZpbmVDb25maWcoe1xuICBlbnRyeTogWydzcmMvbWFpbi50cycsICdzcmMvcmVidWlsZC50cycsICdzcmMvc2VlZC1kZW1vLnRzJ10sXG4gIGZvcm1hdDogWydlc20nXSxcbiAgcGxhdGZvcm06ICdub2RlJyxcbiAgdGFyZ2V0OiAnbm9kZTIwJyxcbiAgb3V0RGlyOiAnZGlzdCcsXG4gIGNsZWFuOiB0cnVlLFxuICBzb3VyY2VtYXA6IHRydWUsXG4gIHNwbGl0dGluZzogZmFsc2UsXG4gIGR0czogZmFsc2UsXG4gIG5vRXh0ZXJuYWw6IFsvXkB0ZXJuXFwvL10sXG4gIGVzYnVpbGRQbHVnaW5zOiBbXG4gICAge1xuICAgICAgbmFtZTogJ2V4dGVybmFsLW5wbS1wYWNrYWdlcycsXG4gICAgICBzZXR1cChidWlsZCkge1xuICAgICAgICBidWlsZC5vblJlc29sdmUoeyBmaWx0ZXI6IC9eW14uL10vIH0sIChhcmdzKSA9PlxuICAgICAgICAgIGFyZ3MucGF0aC5zdGFydHNXaXRoKCdAdGVybi8nKSA/IHVuZGVmaW5lZCA6IHsgcGF0aDogYXJncy5wYXRoLCBleHRlcm5hbDogdHJ1ZSB9LFxuICAgICAgICApO1xuICAgICAgfSxcbiAgICB9LFxuICBdLFxufSk7XG4iXSwKICAibWFwcGluZ3MiOiAiO0FBQXFPLFNBQVMsb0JBQW9CO0FBS2xRLElBQU8sc0JBQVEsYUFBYTtBQUFBLEVBQzFCLE9BQU8sQ0FBQyxlQUFlLGtCQUFrQixrQkFBa0I7QUFBQSxFQUMzRCxRQUFRLENBQUMsS0FBSztBQUFBLEVBQ2QsVUFBVTtBQUFBLEVBQ1YsUUFBUTtBQUFBLEVBQ1IsUUFBUTtBQUFBLEVBQ1IsT0FBTztBQUFBLEVBQ1AsV0FBVztBQUFBLEVBQ1gsV0FBVztBQUFBLEVBQ1gsS0FBSztBQUFBLEVBQ0wsWUFBWSxDQUFDLFVBQVU7QUFBQSxFQUN2QixnQkFBZ0I7QUFBQSxJQUNkO0FBQUEsTUFDRSxNQUFNO0FBQUEsTUFDTixNQUFNLE9BQU87QUFDWCxjQUFNO0FBQUEsVUFBVSxFQUFFLFFBQVEsU0FBUztBQUFBLFVBQUcsQ0FBQyxTQUNyQyxLQUFLLEtBQUssV0FBVyxRQUFRLElBQUksU0FBWSxFQUFFLE1BQU0sS0FBSyxNQUFNLFVBQVUsS0FBSztBQUFBLFFBQ2pGO0FBQUEsTUFDRjtBQUFBLElBQ0Y7QUFBQSxFQUNGO0FBQ0YsQ0FBQzsiLAogICJuYW1lcyI6IFtdCn0K
