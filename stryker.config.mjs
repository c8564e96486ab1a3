// `npm run test:mutation` (docs/reliability.md): mutation testing of the modules where an
// attacker or a wrong input arrives, and of the core maths. scripts/mutation.ts runs one Stryker
// run per group (TERN_MUTATION_GROUP): each group's mutants run only that group's unit tests, so
// a mutant of module-level code does not re-run every unit test of the repository.

/** Modules mutated, by group, with the unit tests that pin them. */
export const MUTATION_GROUPS = {
  auth: {
    mutate: [
      'packages/auth/src/tracking-token.ts',
      'packages/auth/src/jwt.ts',
      'packages/auth/src/jwt-keys.ts',
      'packages/auth/src/jwt-claims.ts',
      'packages/auth/src/jwks.ts',
      'packages/auth/src/api-keys.ts',
    ],
    tests: ['packages/auth/test/**/*.unit.test.ts'],
  },
  webhooks: {
    mutate: ['packages/webhooks/src/url-guard.ts'],
    tests: ['packages/webhooks/test/url-guard.unit.test.ts'],
  },
  domain: {
    mutate: [
      'packages/domain/src/unsubscribe.ts',
      'packages/domain/src/email-fold.ts',
      'packages/domain/src/analytics.ts',
    ],
    tests: ['packages/domain/test/**/*.unit.test.ts'],
  },
  contracts: {
    // The event contract (SPEC §5), one module until issue 25 split it.
    mutate: [
      'packages/contracts/src/events.ts',
      'packages/contracts/src/validate-events.ts',
      'packages/contracts/src/event-data.ts',
      'packages/contracts/src/event-fields.ts',
      'packages/contracts/src/storable.ts',
      'packages/contracts/src/canonical-events.ts',
      'packages/contracts/src/personal-fields.ts',
    ],
    tests: ['packages/contracts/test/**/*.unit.test.ts'],
  },
};

const group = process.env.TERN_MUTATION_GROUP ?? 'auth';
const chosen = MUTATION_GROUPS[group];
if (!chosen) throw new Error(`TERN_MUTATION_GROUP must be one of ${Object.keys(MUTATION_GROUPS).join(', ')}`);
// Read by vitest.mutation.config.ts in Stryker's test-runner processes.
process.env.TERN_MUTATION_TESTS = chosen.tests.join(',');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: chosen.mutate,
  coverageAnalysis: 'perTest',
  // Mutants of module-level code (constant tables, schema definitions) run every test of the group:
  // measured, they were a quarter of the mutants and 96 % of the time. Left out by default so the
  // run fits CI; TERN_MUTATION_STATIC=1 includes them (docs/reliability.md).
  ignoreStatic: process.env.TERN_MUTATION_STATIC !== '1',
  concurrency: Number(process.env.TERN_MUTATION_CONCURRENCY ?? 2),
  timeoutMS: 5000,
  reporters: ['clear-text', 'json'],
  clearTextReporter: { reportTests: false, reportMutants: process.env.TERN_MUTATION_SURVIVORS === '1' },
  jsonReporter: { fileName: `reports/mutation/${group}.json` },
  // Per-module thresholds are checked by scripts/mutation.ts (Stryker's `break` is for the total).
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: ['data', 'reports', 'services/dashboard', 'bench', 'docs'],
};
