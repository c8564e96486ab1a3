import { describe, expect, it } from 'vitest';
import {
  type AnalyticsDelta,
  aggregateDeltas,
  analyticsPeriod,
  contribution,
  dayRange,
  diffContributions,
  foldEmail,
  initialEmailState,
  rate,
  rates,
  retentionCutoff,
  startOfDayUTC,
  utcDay,
  zeroCounters,
} from '../src/index.js';
import {
  bounced,
  clicked,
  complained,
  delayed,
  delivered,
  failed,
  opened,
  queued,
  sent,
  suppressed,
  TENANT,
} from './events.js';

const T0 = '2024-05-01T23:30:00.000Z';
const counters = (patch: Partial<ReturnType<typeof zeroCounters>>) => ({ ...zeroCounters(), ...patch });
/** A row of the rollup: TENANT's, on T0's day, of no template and no project unless `row` says. */
const delta = (row: Partial<AnalyticsDelta>) => ({
  tenantId: TENANT,
  day: '2024-05-01',
  templateId: '',
  projectId: '',
  ...row,
});

describe('contribution of one email (SPEC §6)', () => {
  it('nothing until queued', () => {
    expect(contribution(initialEmailState(TENANT, 'e1'))).toBeNull();
    expect(contribution(foldEmail([delivered('d1', T0), opened('o1', T0)]))).toBeNull();
  });

  it('a queued email counts in total at its createdAt UTC day, template "" when none', () => {
    expect(contribution(foldEmail([queued('q1', '2024-05-02T01:30:00+02:00')]))).toEqual({
      day: '2024-05-01',
      templateId: '',
      projectId: '',
      counters: counters({ total: 1 }),
    });
  });

  it('sent = SENT or DELIVERED; DELAYED is neither sent nor failed', () => {
    const q = queued('q1', T0, { templateId: 'tpl_a' });
    expect(contribution(foldEmail([q, sent('s1', T0)]))?.counters).toEqual(counters({ total: 1, sent: 1 }));
    expect(contribution(foldEmail([q, delivered('d1', T0)]))?.counters).toEqual(
      counters({ total: 1, sent: 1 }),
    );
    expect(contribution(foldEmail([q, sent('s1', T0), delayed('w1', T0)]))?.counters).toEqual(
      counters({ total: 1 }),
    );
    expect(contribution(foldEmail([q]))?.templateId).toBe('tpl_a');
  });

  it('bounced and failed follow the status; suppressed is neither', () => {
    const q = queued('q1', T0);
    expect(contribution(foldEmail([q, sent('s1', T0), bounced('b1', T0)]))?.counters).toEqual(
      counters({ total: 1, bounced: 1 }),
    );
    expect(contribution(foldEmail([q, failed('f1', T0)]))?.counters).toEqual(
      counters({ total: 1, failed: 1 }),
    );
    expect(contribution(foldEmail([q, suppressed('x1', T0)]))?.counters).toEqual(counters({ total: 1 }));
  });

  it('opened, clicked, complained are flags: many events count once', () => {
    const events = [
      queued('q1', T0),
      delivered('d1', T0),
      opened('o1', T0),
      opened('o2', T0),
      clicked('c1', T0),
      clicked('c2', T0),
      complained('k1', T0),
      complained('k2', T0),
    ];
    expect(contribution(foldEmail(events))?.counters).toEqual(
      counters({ total: 1, sent: 1, opened: 1, clicked: 1, complained: 1 }),
    );
  });
});

describe('diffContributions', () => {
  it('a new queued email adds one row', () => {
    expect(diffContributions(null, foldEmail([queued('q1', T0)]))).toEqual([
      delta({ counters: counters({ total: 1 }) }),
    ]);
  });

  it('an email not queued yet adds nothing', () => {
    expect(diffContributions(null, foldEmail([delivered('d1', T0)]))).toEqual([]);
  });

  it('a change within the same row is one signed row', () => {
    const before = foldEmail([queued('q1', T0), sent('s1', T0)]);
    const after = foldEmail([queued('q1', T0), sent('s1', T0), bounced('b1', T0)]);
    expect(diffContributions(before, after)).toEqual([
      delta({ counters: counters({ sent: -1, bounced: 1 }) }),
    ]);
  });

  it('a change that moves no counter yields no row', () => {
    const before = foldEmail([queued('q1', T0), opened('o1', T0)]);
    const after = foldEmail([queued('q1', T0), opened('o1', T0), opened('o2', T0)]);
    expect(diffContributions(before, after)).toEqual([]);
  });

  it('an earlier email.queued moving the email to another day and template gives −old and +new', () => {
    const late = queued('q2', '2024-05-02T00:30:00Z', { templateId: 'tpl_b' });
    const early = queued('q1', T0, { templateId: 'tpl_a' });
    const before = foldEmail([late, sent('s1', T0)]);
    const after = foldEmail([late, sent('s1', T0), early]);
    expect(diffContributions(before, after)).toEqual([
      delta({ day: '2024-05-02', templateId: 'tpl_b', counters: counters({ total: -1, sent: -1 }) }),
      delta({ templateId: 'tpl_a', counters: counters({ total: 1, sent: 1 }) }),
    ]);
  });
});

describe('projects in the rollup (SPEC §16)', () => {
  it('an email of a project contributes under its projectId', () => {
    expect(contribution(foldEmail([queued('q1', T0, { projectId: 'prj_1' })]))?.projectId).toBe('prj_1');
  });

  it('an earlier email.queued naming another project moves the email: −old and +new', () => {
    const late = queued('q2', '2024-05-01T23:50:00Z', { projectId: 'prj_b' });
    const early = queued('q1', T0, { projectId: 'prj_a' });
    const before = foldEmail([late]);
    expect(diffContributions(before, foldEmail([late, early]))).toEqual([
      delta({ projectId: 'prj_b', counters: counters({ total: -1 }) }),
      delta({ projectId: 'prj_a', counters: counters({ total: 1 }) }),
    ]);
  });

  it('aggregates per project and reads outbox rows written before projects existed as projectId ""', () => {
    const base = { tenantId: 't1', day: '2024-05-01', templateId: '' };
    const legacy = { ...base, counters: counters({ total: 1 }) } as unknown as AnalyticsDelta;
    expect(
      aggregateDeltas([
        legacy,
        { ...base, projectId: '', counters: counters({ total: 1 }) },
        { ...base, projectId: 'prj_1', counters: counters({ total: 1 }) },
      ]),
    ).toEqual([
      { ...base, projectId: '', counters: counters({ total: 2 }) },
      { ...base, projectId: 'prj_1', counters: counters({ total: 1 }) },
    ]);
  });
});

describe('aggregateDeltas', () => {
  const row = (
    tenantId: string,
    day: string,
    templateId: string,
    c: Partial<ReturnType<typeof zeroCounters>>,
  ) => ({
    tenantId,
    day,
    templateId,
    projectId: '',
    counters: counters(c),
  });

  it('sums per (tenant, day, template) and drops rows that cancel out', () => {
    expect(
      aggregateDeltas([
        row('t1', '2024-05-01', '', { total: 1, sent: 1 }),
        row('t1', '2024-05-01', '', { sent: -1, bounced: 1 }),
        row('t2', '2024-05-01', '', { total: 1 }),
        row('t1', '2024-05-02', 'tpl', { total: 1 }),
        row('t1', '2024-05-02', 'tpl', { total: -1 }),
        row('t1', '2024-05-01', 'tpl', { opened: 1 }),
      ]),
    ).toEqual([
      row('t1', '2024-05-01', '', { total: 1, bounced: 1 }),
      row('t2', '2024-05-01', '', { total: 1 }),
      row('t1', '2024-05-01', 'tpl', { opened: 1 }),
    ]);
  });

  it('keeps keys apart even when their parts could be concatenated alike', () => {
    expect(
      aggregateDeltas([row('a:b', 'c', '', { total: 1 }), row('a', 'b:c', '', { total: 1 })]),
    ).toHaveLength(2);
  });

  it('does not alias or mutate its input', () => {
    const input = [row('t1', '2024-05-01', '', { total: 1 }), row('t1', '2024-05-01', '', { total: 1 })];
    const out = aggregateDeltas(input);
    expect(out[0]?.counters.total).toBe(2);
    expect(input[0]?.counters.total).toBe(1);
    expect(aggregateDeltas([input[1]!])[0]?.counters).not.toBe(input[1]?.counters);
  });
});

describe('analyticsPeriod and dayRange (SPEC §6)', () => {
  const now = new Date('2024-03-10T15:30:45.123Z');

  it('days = 1: since is today 00:00:00.000Z, until is now', () => {
    expect(analyticsPeriod(now, 1)).toEqual({
      days: 1,
      since: '2024-03-10T00:00:00.000Z',
      until: '2024-03-10T15:30:45.123Z',
    });
  });

  it('days = 30 counts today: since = today − 29 days (across a leap February)', () => {
    expect(analyticsPeriod(now, 30).since).toBe('2024-02-10T00:00:00.000Z');
  });

  it('days = 90 across a year boundary', () => {
    expect(analyticsPeriod(new Date('2024-01-15T00:00:00.000Z'), 90).since).toBe('2023-10-18T00:00:00.000Z');
  });

  it('at exactly midnight, today is the new day', () => {
    expect(analyticsPeriod(new Date('2024-03-10T00:00:00.000Z'), 1).since).toBe('2024-03-10T00:00:00.000Z');
    expect(analyticsPeriod(new Date('2024-03-09T23:59:59.999Z'), 1).since).toBe('2024-03-09T00:00:00.000Z');
  });

  it.each([1, 7, 30, 90])('dayRange(since, %i) has that many days, oldest first, ending today', (days) => {
    const { since } = analyticsPeriod(now, days);
    const range = dayRange(since, days);
    expect(range).toHaveLength(days);
    expect(range[0]).toBe(since.slice(0, 10));
    expect(range.at(-1)).toBe('2024-03-10');
    expect([...range].sort()).toEqual(range);
    expect(new Set(range).size).toBe(days);
  });

  it('dayRange walks through month ends and Feb 29', () => {
    expect(dayRange('2024-02-28T00:00:00.000Z', 3)).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
    expect(dayRange(new Date('2023-12-31T12:00:00Z'), 2)).toEqual(['2023-12-31', '2024-01-01']);
  });
});

describe('rate: percent, one decimal, half-up, integer arithmetic', () => {
  it.each([
    [1, 3, 33.3],
    [2, 3, 66.7],
    [1, 8, 12.5],
    [1, 16, 6.3], // 6.25 exactly → up
    [3, 16, 18.8], // 18.75 exactly → up
    [1, 2000, 0.1], // 0.05 exactly → up
    [1, 2001, 0], // just under 0.05 → down
    [29, 200, 14.5],
    [0, 5, 0],
    [5, 5, 100],
    [0, 0, 0],
    [3, 0, 0],
    [1, 7, 14.3],
    [123_456, 1_000_000, 12.3],
    [999_999, 1_000_000, 100], // 99.9999 → 100.0
  ])('rate(%i, %i) = %d', (n, d, expected) => {
    expect(rate(n, d)).toBe(expected);
  });

  it('rates use sent as denominator except bounceRate (total)', () => {
    expect(rates({ total: 10, sent: 8, opened: 4, clicked: 1, bounced: 1, complained: 2 })).toEqual({
      openRate: 50,
      clickRate: 12.5,
      bounceRate: 10,
      complaintRate: 25,
    });
    expect(rates({ total: 0, sent: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 })).toEqual({
      openRate: 0,
      clickRate: 0,
      bounceRate: 0,
      complaintRate: 0,
    });
  });
});

describe('retention cut-off: day-granular, UTC', () => {
  it('is the start of today minus retentionDays days', () => {
    expect(retentionCutoff(new Date('2024-03-10T15:30:00Z'), 90).toISOString()).toBe(
      '2023-12-11T00:00:00.000Z',
    );
    expect(retentionCutoff(new Date('2024-03-10T00:00:00Z'), 1).toISOString()).toBe(
      '2024-03-09T00:00:00.000Z',
    );
    expect(retentionCutoff(new Date('2024-03-10T23:59:59.999Z'), 0).toISOString()).toBe(
      '2024-03-10T00:00:00.000Z',
    );
  });

  it('does not move during the day, so logs and daily rollups cut at the same day boundary', () => {
    const a = retentionCutoff(new Date('2024-03-10T00:00:00.001Z'), 30);
    const b = retentionCutoff(new Date('2024-03-10T23:59:59.999Z'), 30);
    expect(a).toEqual(b);
    expect(utcDay(a.getTime())).toBe('2024-02-09');
  });
});

describe('time helpers', () => {
  it('startOfDayUTC and utcDay ignore the offset the instant was written with', () => {
    expect(startOfDayUTC(new Date('2024-05-02T01:00:00+02:00')).toISOString()).toBe(
      '2024-05-01T00:00:00.000Z',
    );
    expect(utcDay('2024-05-01T20:00:00-05:00')).toBe('2024-05-02');
  });
});
