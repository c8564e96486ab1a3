// Types of stryker.config.mjs for scripts/mutation.ts.
export declare const MUTATION_GROUPS: Record<string, { mutate: string[]; tests: string[] }>;
declare const config: Record<string, unknown>;
export default config;
