import type { AutomationStep } from '@tern/contracts';

/**
 * The pure part of an automation run (SPEC §27): where a step is in the tree, which step comes
 * after it. (An `if` is evaluated in SQL: `contactMatches`.) A position is a path: indexes into the step
 * lists joined with the branch taken, `1`, `1.else.0`, `1.else.0.then.2`. Paths never repeat
 * within a run (the tree has no loop), so (run, path) names each step done exactly once.
 */

type Branch = 'then' | 'else';

function segments(path: string): (number | Branch)[] {
  return path.split('.').map((s) => (s === 'then' || s === 'else' ? s : Number(s)));
}

/** The step at `path`, or undefined when the automation changed and it is gone. */
export function stepAt(steps: readonly AutomationStep[], path: string): AutomationStep | undefined {
  let list: readonly AutomationStep[] | undefined = steps;
  let step: AutomationStep | undefined;
  for (const seg of segments(path)) {
    if (typeof seg === 'number') {
      step = Number.isInteger(seg) ? list?.[seg] : undefined;
      if (step === undefined) return undefined;
    } else {
      list =
        step !== undefined && seg in step ? (step as { [k in Branch]?: AutomationStep[] })[seg] : undefined;
      step = undefined;
    }
  }
  return step;
}

/** The step after the one at `path`: its next sibling, or — at the end of a branch — the step after the branch's owner. */
export function nextPath(steps: readonly AutomationStep[], path: string): string | null {
  const segs = path.split('.');
  const last = Number(segs[segs.length - 1]);
  const sibling = [...segs.slice(0, -1), String(last + 1)].join('.');
  if (stepAt(steps, sibling) !== undefined) return sibling;
  if (segs.length < 3) return null;
  return nextPath(steps, segs.slice(0, -2).join('.'));
}

/** Where a run goes after the step at `path` took `branch`: the branch's first step, or the next one. */
export function afterBranch(steps: readonly AutomationStep[], path: string, branch: Branch): string | null {
  const first = `${path}.${branch}.0`;
  return stepAt(steps, first) !== undefined ? first : nextPath(steps, path);
}
