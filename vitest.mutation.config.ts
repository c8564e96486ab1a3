import { defineConfig } from 'vitest/config';

// The unit tests of one mutation group (stryker.config.mjs sets TERN_MUTATION_TESTS): Stryker's
// vitest runner runs, for each mutant, only the tests that cover it (coverage per test).
export default defineConfig({
  test: {
    include: (process.env.TERN_MUTATION_TESTS ?? 'packages/*/test/**/*.unit.test.ts').split(','),
    exclude: ['**/node_modules/**', '**/dist/**', '**/.stryker-tmp/**'],
    pool: 'forks',
    testTimeout: 60_000,
  },
});
