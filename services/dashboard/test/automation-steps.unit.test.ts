// The automation form's inverse (issue 47): an existing automation opens in the simple step form
// when `draftsOf` reads its steps, and the form writes those steps back unchanged.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { draftsOf, readSteps, stepsOf } from '../web/pages/automation-steps.js';
import type { AutomationStep } from '../web/types.js';

/** The tenant's properties: an update's value is of its property's type (the API checks it). */
const TYPES = new Map([
  ['plan', 'string'],
  ['seats', 'number'],
  ['replied', 'boolean'],
]);

/** A text the form writes back as is (trimmed, not empty). */
const text = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() === s && s !== '');
const duration = fc.oneof(fc.constantFrom('P1D', 'PT30M', 'P1W', 'P1DT12H', 'PT45S'), text);
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
);
const update = fc
  .constantFrom(...TYPES.keys())
  .chain((name) =>
    (TYPES.get(name) === 'number' ? number : TYPES.get(name) === 'boolean' ? fc.boolean() : fc.string()).map(
      (value) => ({ update: { [name]: value } }) as AutomationStep,
    ),
  );
/** A step of the form. */
const step: fc.Arbitrary<AutomationStep> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }).map((send) => ({ send })),
  duration.map((delay) => ({ delay })),
  fc.record({ event: text, timeout: duration }).map((waitFor) => ({ waitFor })),
  update,
);
const expressible = fc.array(step, { minLength: 1, maxLength: 8 });
/** Any steps the API takes: branches of `waitFor` and `if`, an update of several properties or null. */
const anyStep: fc.Arbitrary<AutomationStep> = fc.letrec<{ s: AutomationStep }>((tie) => ({
  s: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    step,
    fc.record({ update: fc.dictionary(fc.constantFrom(...TYPES.keys()), fc.constant(null)) }),
    fc.record(
      {
        waitFor: fc.record({ event: text, timeout: duration }),
        then: fc.array(tie('s'), { maxLength: 3 }),
        else: fc.array(tie('s'), { maxLength: 3 }),
      },
      { requiredKeys: ['waitFor'] },
    ),
    fc.record({ if: fc.constant({ tag: 'vip' }), then: fc.array(tie('s'), { maxLength: 3 }) }),
  ),
})).s;
/** Steps the form cannot write: one `if` or branching wait among form steps. */
const branching = fc
  .tuple(
    fc.array(step, { maxLength: 3 }),
    fc.oneof(
      fc.constant({ if: { tag: 'vip' }, then: [{ send: 'tpl_1' }] } as AutomationStep),
      fc.constant({ waitFor: { event: 'email.opened', timeout: 'P1D' }, else: [] } as AutomationStep),
    ),
    fc.array(step, { maxLength: 3 }),
  )
  .map(([before, s, after]) => [...before, s, ...after]);

describe('draftsOf, the inverse of the form’s steps', () => {
  it('reads back every list of steps the form writes: stepsOf(draftsOf(s)) is s', () => {
    fc.assert(
      fc.property(expressible, (steps) => {
        const drafts = draftsOf(steps);
        expect(drafts).not.toBeNull();
        expect(stepsOf(drafts!, TYPES)).toEqual(steps);
      }),
      { numRuns: 500 },
    );
  });

  it('branches (if, then/else of a wait): null, with why', () => {
    fc.assert(
      fc.property(branching, (steps) => {
        expect(draftsOf(steps)).toBeNull();
        expect((readSteps(steps) as { reason: string }).reason).toMatch(
          /^This automation (has a condition \(an if step\)|branches \(then\/else after a wait\)): edit its steps as JSON\.$/,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('any steps: either null or read back exactly', () => {
    fc.assert(
      fc.property(fc.array(anyStep, { maxLength: 6 }), (steps) => {
        const drafts = draftsOf(steps);
        if (drafts !== null) expect(stepsOf(drafts, TYPES)).toEqual(steps);
      }),
      { numRuns: 500 },
    );
  });

  it('the drafts of each kind of step', () => {
    expect(
      draftsOf([
        { send: 'tpl_1' },
        { delay: 'P1D' },
        { waitFor: { event: 'email.opened', timeout: 'PT12H' } },
        { update: { seats: 3 } },
        { update: { replied: false } },
      ]),
    ).toEqual([
      { kind: 'send', a: 'tpl_1', b: '' },
      { kind: 'delay', a: 'P1D', b: '' },
      { kind: 'waitFor', a: 'email.opened', b: 'PT12H' },
      { kind: 'update', a: 'seats', b: '3' },
      { kind: 'update', a: 'replied', b: 'false' },
    ]);
  });

  it('what the form would write otherwise: null, with why', () => {
    const cannot: [unknown, string][] = [
      [[], 'This automation has no list of steps: edit its steps as JSON.'],
      [
        [{ update: { plan: 'pro', seats: 2 } }],
        'A step sets several properties at once: edit the steps as JSON.',
      ],
      [[{ update: { plan: null } }], 'A step clears the property plan (null): edit the steps as JSON.'],
      [[{ delay: ' P1D' }], 'The form cannot write the step {"delay":" P1D"}: edit the steps as JSON.'],
      [[{ send: '' }], 'The form cannot write the step {"send":""}: edit the steps as JSON.'],
      [
        [{ send: 'a', delay: 'P1D' }],
        'The form cannot write the step {"send":"a","delay":"P1D"}: edit the steps as JSON.',
      ],
      [
        [{ waitFor: { event: 'x', timeout: 'P1D', extra: 1 } }],
        'The form cannot write the step {"waitFor":{"event":"x","timeout":"P1D","extra":1}}: edit the steps as JSON.',
      ],
    ];
    for (const [steps, reason] of cannot) {
      expect(readSteps(steps), JSON.stringify(steps)).toEqual({ reason });
      expect(draftsOf(steps as AutomationStep[])).toBeNull();
    }
  });
});
