// The automation form's steps as data: the API's steps made of them (`stepsOf`), and back
// (`draftsOf`) when the form can write the steps.
import type { AutomationStep } from '../types.js';

export const STEP_KINDS = {
  send: 'Send a template',
  delay: 'Wait for a while',
  waitFor: 'Wait for an event',
  update: 'Set a property',
} as const;
export type StepKind = keyof typeof STEP_KINDS;

export interface StepDraft {
  kind: StepKind;
  /** send: template id; delay: duration; waitFor: event; update: property. */
  a: string;
  /** waitFor: timeout; update: value. */
  b: string;
}

export const emptyStep = (): StepDraft => ({ kind: 'send', a: '', b: '' });

/** One step of the form as the API's, an `update`'s value of its property's type (`types`: name → type). */
export function stepOf(s: StepDraft, types: ReadonlyMap<string, string>): AutomationStep {
  switch (s.kind) {
    case 'send':
      return { send: s.a };
    case 'delay':
      return { delay: s.a.trim() };
    case 'waitFor':
      return { waitFor: { event: s.a.trim(), timeout: s.b.trim() } };
    case 'update': {
      const type = types.get(s.a);
      const value = type === 'number' ? Number(s.b) : type === 'boolean' ? s.b === 'true' : s.b;
      return { update: { [s.a]: value } };
    }
  }
}

/** The steps of the form, as the API's. */
export const stepsOf = (drafts: readonly StepDraft[], types: ReadonlyMap<string, string>): AutomationStep[] =>
  drafts.map((s) => stepOf(s, types));

/** The drafts of steps the form writes, or why the form cannot write them (a sentence). */
export type ReadSteps = { drafts: StepDraft[] } | { reason: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
/** A text as the form writes it back (trimmed, not empty). */
const trimmed = (v: unknown): v is string => typeof v === 'string' && v.trim() === v && v !== '';

/**
 * One step's draft, or why not. An `update`'s value is taken to be of its property's type (the
 * API checks it on every write): the form turns the text back into a number or a boolean by that type.
 */
function readStep(step: unknown): StepDraft | { reason: string } {
  const cannot = {
    reason: `The form cannot write the step ${JSON.stringify(step)}: edit the steps as JSON.`,
  };
  if (!isObject(step)) return cannot;
  if ('if' in step)
    return { reason: 'This automation has a condition (an if step): edit its steps as JSON.' };
  if ('then' in step || 'else' in step)
    return { reason: 'This automation branches (then/else after a wait): edit its steps as JSON.' };
  const keys = Object.keys(step);
  if (keys.length !== 1) return cannot;
  if (typeof step.send === 'string' && step.send !== '') return { kind: 'send', a: step.send, b: '' };
  if (trimmed(step.delay)) return { kind: 'delay', a: step.delay, b: '' };
  const wait = step.waitFor;
  if (isObject(wait)) {
    const ok = Object.keys(wait).length === 2 && trimmed(wait.event) && trimmed(wait.timeout);
    return ok ? { kind: 'waitFor', a: wait.event as string, b: wait.timeout as string } : cannot;
  }
  const update = step.update;
  if (!isObject(update)) return cannot;
  const entries = Object.entries(update);
  if (entries.length !== 1)
    return { reason: 'A step sets several properties at once: edit the steps as JSON.' };
  const [name, value] = entries[0]!;
  if (value === null) return { reason: `A step clears the property ${name} (null): edit the steps as JSON.` };
  if (name === '') return cannot;
  if (typeof value === 'string' || typeof value === 'boolean')
    return { kind: 'update', a: name, b: String(value) };
  if (typeof value === 'number' && Number.isFinite(value))
    return { kind: 'update', a: name, b: String(value) };
  return cannot;
}

/**
 * The inverse of `stepsOf`: the drafts when the steps are ones the form writes (a flat list of
 * send, delay, waitFor without branches and update of one property), so that
 * `stepsOf(drafts, types)` gives the steps back; otherwise why not.
 */
export function readSteps(steps: unknown): ReadSteps {
  if (!Array.isArray(steps) || steps.length === 0)
    return { reason: 'This automation has no list of steps: edit its steps as JSON.' };
  const drafts: StepDraft[] = [];
  for (const step of steps) {
    const d = readStep(step);
    if ('reason' in d) return d;
    drafts.push(d);
  }
  return { drafts };
}

/** `readSteps`'s drafts, or null when the form cannot write the steps. */
export function draftsOf(steps: readonly AutomationStep[]): StepDraft[] | null {
  const read = readSteps(steps);
  return 'reason' in read ? null : read.drafts;
}
