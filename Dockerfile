# syntax=docker/dockerfile:1
# Tern's production image: one image, every role; docker-compose.yml (and docs/deploy.md) pick
# the role of each container with `--services=…`.
#
#   build      every dependency (dev included) and `npm run build`
#   prod-deps  the production dependencies alone
#   runtime    node, those node_modules, the bundles, the dashboard and the migrations; user `node`
#
# .ci/run, infra/docker/lockfile.int.test.ts and test/e2e/image.e2e.test.ts run this file's
# `npm ci` lines as they are, outside Docker, on a clean clone (infra/docker/dockerfile.mjs reads
# them from here): keep each install on a `RUN` line of its own. Both install stages copy the
# whole context (a clean clone, .dockerignore) for that reason; the npm cache mount keeps a
# rebuild after a source change from downloading the packages again.

# The Node and npm CI runs with: .ci/run installs this Node into the checkout (infra/node.sh).
# npm ci's lockfile check is npm's: a different npm may accept or refuse a lockfile differently,
# so the image installs with the same one.
ARG NODE_VERSION=24.22.3

FROM node:${NODE_VERSION}-bookworm-slim AS base
ARG NPM_VERSION=11.19.1
RUN npm install --global npm@${NPM_VERSION} --no-audit --no-fund
WORKDIR /app

FROM base AS build
COPY . .
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
RUN npm run build

FROM base AS prod-deps
COPY . .
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund
# The workspaces are bundled into services/tern/dist; their links into the sources go.
RUN rm -rf node_modules/@tern
# The embedded ClickHouse engine (chDB's libchdb.so, ≈ 570 MB) serves only a process that runs
# projector and api together without CLICKHOUSE_URL. A fleet with a ClickHouse server may build
# with --build-arg EMBEDDED_CLICKHOUSE=false to leave it out.
ARG EMBEDDED_CLICKHOUSE=true
RUN if [ "$EMBEDDED_CLICKHOUSE" = "false" ]; then rm -rf node_modules/@chdb; fi

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/var/lib/tern
WORKDIR /app
# What `node services/tern/dist/main.js` reads at run time: the npm packages the bundle imports,
# the migrations (services/tern/src/runtime.ts finds them two levels above dist/) and the
# dashboard's build (served at GET / by the api role). Owned by root: the process cannot change
# its own code.
COPY --from=prod-deps /app/node_modules node_modules
COPY --from=build /app/package.json package.json
COPY --from=build /app/infra/migrations infra/migrations
COPY --from=build /app/services/dashboard/dist services/dashboard/dist
COPY --from=build /app/services/tern/package.json services/tern/package.json
COPY --from=build /app/services/tern/dist services/tern/dist
# Only the embedded stores write here (chDB of a projector+api process, dev secrets outside production).
RUN mkdir -p /var/lib/tern && chown node:node /var/lib/tern
USER node
EXPOSE 3000
# /ready: the process's stores answer and its projector is not stalled (README). Node itself
# asks, on the container's PORT: the slim image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and receives SIGTERM itself (no npm or shell in between): main.ts stops
# gracefully, the ingest primary passes the signal on to its workers. Every role by default;
# compose and the fleet give `--services=…`.
CMD ["node", "services/tern/dist/main.js"]
