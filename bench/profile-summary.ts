/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function and per
 * package/file, so a bench's hot spots can be read without a browser.
 *   npx tsx bench/profile-summary.ts <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository's root as it appears in a profile's script URLs (`file:///…/`). */
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where a script lives, shortened: `pkg:name` for node_modules (`pkg:name/file` with `withFile`),
 * `tern:path` for the repo.
 */
export function origin(url: string, withFile = false): string {
  if (url === '') return '(native/vm)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    const scoped = rest[0]!.startsWith('@');
    const name = scoped ? `${rest[0]}/${rest[1]}` : rest[0];
    return withFile ? `pkg:${name}/${rest.slice(scoped ? 2 : 1).join('/')}` : `pkg:${name}`;
  }
  if (url.startsWith('node:')) return url;
  const repo = url.indexOf(REPO_ROOT);
  return repo >= 0 ? `tern:${url.slice(repo + REPO_ROOT.length)}` : url;
}

function summarise(path: string, top: number): void {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Inclusive: a sample counts for every origin on its stack (once each).
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)!.callFrame.url;
      if (url !== '') seen.add(origin(url));
    }
    for (const o of seen) inclusive.set(o, (inclusive.get(o) ?? 0) + us);
  }
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id)!;
    const name = `${callFrame.functionName || '(anonymous)'} ${origin(callFrame.url, true)}:${callFrame.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const o = origin(callFrame.url);
    file.set(o, (file.get(o) ?? 0) + us);
  }
  const show = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(
        `${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`,
      );
    }
  };
  console.log(`${path}: ${(total / 1000).toFixed(0)} ms sampled`);
  show('self time by origin', file);
  show('inclusive time by origin (stacks through it)', inclusive);
  show('self time by function', fn);
}

const [path, topArg] = process.argv.slice(2);
if (!path) throw new Error('usage: profile-summary.ts <file.cpuprofile> [top]');
summarise(path, Number(topArg ?? 25));
