import { defineConfig } from 'vitest/config';

// `npm run test:faults` (docs/reliability.md): kill -9, outages and poison on ≥ 100 000 events.
// Only when TERN_FAULTS=1 (the script sets it), so `npm test` never runs it; .ci/run runs it after.
const faults =
  process.env.TERN_FAULTS === '1'
    ? [
        {
          extends: true as const,
          test: {
            name: 'faults',
            include: ['test/faults/**/*.faults.test.ts'],
            exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
            globalSetup: ['test/setup/global-setup.ts'],
            testTimeout: 600_000,
          },
        },
      ]
    : [];

// `npm run test:cluster` (docs/deploy.md): a three-broker Kafka cluster, a Postgres failover and
// roles scaled under load, each a real server of the suite's own. Only when TERN_CLUSTER=1.
const cluster =
  process.env.TERN_CLUSTER === '1'
    ? [
        {
          extends: true as const,
          test: {
            name: 'cluster',
            include: ['test/cluster/**/*.cluster.test.ts'],
            exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
            globalSetup: ['test/setup/global-setup.ts'],
            testTimeout: 900_000,
          },
        },
      ]
    : [];

// Tiers by file suffix. Integration and e2e tests share a global setup that obtains real
// services (env vars → testcontainers → native broker/cluster) and fails loudly otherwise.
// Every test file runs in its own forked process: chDB binds one data directory per process.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['**/*.unit.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
        },
      },
      {
        extends: true,
        test: {
          name: 'int',
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
          globalSetup: ['test/setup/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['**/*.e2e.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**', 'services/dashboard/**'],
          globalSetup: ['test/setup/global-setup.ts'],
        },
      },
      // The dashboard's browser tests (e2e tier): one Tern and one Chromium for all their files,
      // started by their own global setup (embedded stores: no broker or database of the run).
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['services/dashboard/test/**/*.e2e.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
          globalSetup: ['services/dashboard/test/global-setup.ts'],
          testTimeout: 120_000,
        },
      },
      ...faults,
      ...cluster,
    ],
  },
});
