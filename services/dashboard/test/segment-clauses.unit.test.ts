// The segment builder's inverse (issue 47): an existing segment opens in the conditions form when
// `clausesOf` reads its filter, and the form writes that filter back unchanged.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clausesOf, ENGAGEMENTS, filterOf, OPS, readFilter } from '../web/pages/segment-clauses.js';
import type { SegmentFilter } from '../web/types.js';

/** The tenant's properties: a filter's values are of their property's type (the API checks it). */
const TYPES = new Map([
  ['plan', 'string'],
  ['seats', 'number'],
  ['legacy', 'boolean'],
  ['since', 'date'],
  ['first name', 'string'],
]);

/** A text the form writes back as is (trimmed, not empty). */
const text = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() === s && s !== '');
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
);
const valuesOf = (type: string): fc.Arbitrary<unknown> =>
  type === 'number'
    ? number
    : type === 'boolean'
      ? fc.boolean()
      : type === 'date'
        ? fc
            .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
            .map((d) => d.toISOString())
        : text;

const property = fc.constantFrom(...TYPES.keys()).chain((name) =>
  fc.oneof(
    fc.constant({ property: name, op: 'exists' }),
    fc.record({
      property: fc.constant(name),
      op: fc.constantFrom(...OPS.filter((op) => op !== 'exists')),
      value: valuesOf(TYPES.get(name)!),
    }),
  ),
);
const leaf: fc.Arbitrary<SegmentFilter> = fc.oneof(
  property,
  fc.record({ engagement: fc.constantFrom(...ENGAGEMENTS), days: fc.integer({ min: 1, max: 365 }) }),
  ...(['audience', 'topic', 'tag', 'campaign'] as const).map((k) => text.map((s) => ({ [k]: s }))),
);
/** A condition of the form: a leaf, possibly negated. */
const clause = fc.oneof(
  leaf,
  leaf.map((f) => ({ not: f })),
);
const match = fc.constantFrom('and' as const, 'or' as const);
/** What the form writes: one condition, or `and`/`or` of two or more. */
const expressible: fc.Arbitrary<SegmentFilter> = fc.oneof(
  clause,
  fc.tuple(match, fc.array(clause, { minLength: 2, maxLength: 6 })).map(([m, parts]) => ({ [m]: parts })),
);
/** Any filter the API takes: groups in groups, up to a few deep. */
const anyFilter: fc.Arbitrary<SegmentFilter> = fc.letrec<{ f: SegmentFilter }>((tie) => ({
  f: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('f').map((f) => ({ not: f })),
    fc.tuple(match, fc.array(tie('f'), { maxLength: 4 })).map(([m, parts]) => ({ [m]: parts })),
  ),
})).f;
/** A filter with a group inside a group (or a negated group, or a double negation). */
const nested: fc.Arbitrary<SegmentFilter> = fc.oneof(
  fc
    .tuple(match, fc.array(clause, { maxLength: 3 }), expressible, fc.array(clause, { maxLength: 3 }))
    .filter(([, , group]) => 'and' in group || 'or' in group)
    .map(([m, before, group, after]) => ({ [m]: [...before, group, ...after] })),
  fc.tuple(match, fc.array(clause, { minLength: 2, maxLength: 4 })).map(([m, parts]) => ({
    not: { [m]: parts },
  })),
  leaf.map((f) => ({ not: { not: f } })),
  fc
    .tuple(match, fc.array(clause, { maxLength: 3 }), leaf)
    .map(([m, parts, f]) => ({ [m]: [...parts, { not: { not: f } }] })),
);

describe('clausesOf, the inverse of filterOf', () => {
  it('reads back every filter the form writes: filterOf(clausesOf(f)) is f', () => {
    fc.assert(
      fc.property(expressible, (f) => {
        const read = clausesOf(f);
        expect(read).not.toBeNull();
        expect(filterOf(read!.clauses, read!.match, TYPES)).toEqual(f);
      }),
      { numRuns: 500 },
    );
  });

  it('a filter with a group in a group: null, and the note says it nests groups', () => {
    fc.assert(
      fc.property(nested, (f) => {
        expect(clausesOf(f)).toBeNull();
        expect(readFilter(f)).toEqual({ reason: 'This filter nests groups: edit it as JSON.' });
      }),
      { numRuns: 300 },
    );
  });

  it('any filter: either null or read back exactly (the form never changes what it did not show)', () => {
    fc.assert(
      fc.property(anyFilter, (f) => {
        const read = clausesOf(f);
        if (read !== null) expect(filterOf(read.clauses, read.match, TYPES)).toEqual(f);
      }),
      { numRuns: 500 },
    );
  });

  it('the conditions of the e2e segment, one by one', () => {
    const filter = {
      and: [{ property: 'plan', op: 'eq', value: 'pro' }, { not: { topic: 'top_1' } }],
    };
    expect(clausesOf(filter)).toEqual({
      match: 'and',
      clauses: [
        { kind: 'property', not: false, subject: 'plan', op: 'eq', value: 'pro', days: '30' },
        { kind: 'topic', not: true, subject: 'top_1', op: 'eq', value: '', days: '30' },
      ],
    });
    expect(clausesOf({ or: [{ property: 'seats', op: 'gte', value: 20 }, { tag: 'vip' }] })).toMatchObject({
      match: 'or',
      clauses: [
        { subject: 'seats', op: 'gte', value: '20' },
        { kind: 'tag', subject: 'vip' },
      ],
    });
    expect(clausesOf({ engagement: 'opened', days: 7 })).toMatchObject({
      match: 'and',
      clauses: [{ kind: 'engagement', subject: 'opened', days: '7' }],
    });
  });

  it('what the form would write otherwise: null, with why', () => {
    const cannot: [SegmentFilter, string][] = [
      [{ and: [{ tag: 'a' }] }, 'This filter is a group of one condition: edit it as JSON.'],
      [{ or: [] }, 'This filter is a group of no condition: edit it as JSON.'],
      [
        { and: [{ tag: 'a' }, { tag: 'b' }], or: [] },
        'This filter has more than a group of conditions: edit it as JSON.',
      ],
      [
        { property: 'plan', op: 'eq', value: ' pro ' },
        'The form cannot write the condition {"property":"plan","op":"eq","value":" pro "}: edit it as JSON.',
      ],
      [
        { property: 'plan', op: 'exists', value: 'x' },
        'The form cannot write the condition {"property":"plan","op":"exists","value":"x"}: edit it as JSON.',
      ],
      [
        { property: 'plan', op: 'eq' },
        'The form cannot write the condition {"property":"plan","op":"eq"}: edit it as JSON.',
      ],
      [
        { property: 'plan', op: 'like', value: 'x' },
        'The form cannot write the condition {"property":"plan","op":"like","value":"x"}: edit it as JSON.',
      ],
      [
        { engagement: 'opened', days: 0 },
        'The form cannot write the condition {"engagement":"opened","days":0}: edit it as JSON.',
      ],
      [
        { engagement: 'forwarded', days: 3 },
        'The form cannot write the condition {"engagement":"forwarded","days":3}: edit it as JSON.',
      ],
      [{ not: { tag: '' } }, 'The form cannot write the condition {"tag":""}: edit it as JSON.'],
      [
        { tag: 'a', campaign: 'b' },
        'The form cannot write the condition {"tag":"a","campaign":"b"}: edit it as JSON.',
      ],
      [{ not: { or: [{ tag: 'a' }, { tag: 'b' }] } }, 'This filter nests groups: edit it as JSON.'],
      [[] as unknown as SegmentFilter, 'This filter is not an object: edit it as JSON.'],
    ];
    for (const [f, reason] of cannot) {
      expect(readFilter(f), JSON.stringify(f)).toEqual({ reason });
      expect(clausesOf(f)).toBeNull();
    }
  });
});
