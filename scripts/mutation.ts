// `npm run test:mutation [group…]` (docs/reliability.md): Stryker over the modules of
// stryker.config.mjs, one run per group, then every module's mutation score against THRESHOLD.
// Exits 1 when any module scores lower (or a run fails), naming it. Reports: reports/mutation/.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { MUTATION_GROUPS } from '../stryker.config.mjs';

/** Lowest mutation score (%) a module may have. */
export const THRESHOLD = Number(process.env.TERN_MUTATION_THRESHOLD ?? 85);

type Status = 'Killed' | 'Timeout' | 'Survived' | 'NoCoverage' | 'CompileError' | 'RuntimeError' | 'Ignored';
interface Report {
  files: Record<string, { mutants: { status: Status }[] }>;
}

/** Stryker's score: detected (killed or timed out) over valid mutants (errors and ignored left out). */
export function scoreOf(statuses: readonly Status[]): { score: number; detected: number; valid: number } {
  const detected = statuses.filter((s) => s === 'Killed' || s === 'Timeout').length;
  const valid = detected + statuses.filter((s) => s === 'Survived' || s === 'NoCoverage').length;
  return { score: valid === 0 ? 100 : (100 * detected) / valid, detected, valid };
}

const groups = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(MUTATION_GROUPS);
const failures: string[] = [];
const rows: string[] = [];
const started = Date.now();
for (const group of groups) {
  if (!(group in MUTATION_GROUPS)) {
    console.error(`unknown group ${group}; groups: ${Object.keys(MUTATION_GROUPS).join(', ')}`);
    process.exit(2);
  }
  const t0 = Date.now();
  const run = spawnSync('npx', ['stryker', 'run'], {
    stdio: 'inherit',
    env: { ...process.env, TERN_MUTATION_GROUP: group },
  });
  if (run.status !== 0) {
    failures.push(`${group}: stryker exited ${run.status ?? run.signal}`);
    continue;
  }
  const report = JSON.parse(readFileSync(`reports/mutation/${group}.json`, 'utf8')) as Report;
  for (const [file, { mutants }] of Object.entries(report.files)) {
    const { score, detected, valid } = scoreOf(mutants.map((m) => m.status));
    rows.push(`${score.toFixed(1).padStart(6)} %  ${String(detected).padStart(4)}/${valid}  ${file}`);
    if (score < THRESHOLD) failures.push(`${file}: ${score.toFixed(1)} % < ${THRESHOLD} %`);
  }
  console.log(`mutation group ${group}: ${Math.round((Date.now() - t0) / 1000)} s`);
}
console.log(
  `\nmutation scores (threshold ${THRESHOLD} % per module), ${Math.round((Date.now() - started) / 1000)} s:`,
);
for (const row of rows) console.log(row);
if (failures.length > 0) {
  console.error(`\nmutation testing failed:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
