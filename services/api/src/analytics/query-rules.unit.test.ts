import { describe, expect, it } from 'vitest';
import { analyticsQuerySchema, cohortDays, logsQuerySchema } from '../index.js';

describe('cohortDays', () => {
  const at = new Date('2026-06-15T12:00:00.000Z');

  it('starts at the period’s first day when retention reaches further back', () => {
    expect(cohortDays(at, '2026-06-09T00:00:00.000Z', 90)).toEqual({
      fromDay: '2026-06-09',
      toDay: '2026-06-15',
    });
  });

  it('starts at the retention cut-off day when it is later than the period start', () => {
    expect(cohortDays(at, '2026-03-18T00:00:00.000Z', 10)).toEqual({
      fromDay: '2026-06-05',
      toDay: '2026-06-15',
    });
  });

  it('cuts at 00:00 of today − retentionDays, whatever the time of day', () => {
    expect(cohortDays(new Date('2026-06-15T23:59:59.999Z'), '2026-01-01T00:00:00.000Z', 1).fromDay).toBe(
      '2026-06-14',
    );
    expect(cohortDays(new Date('2026-06-16T00:00:00.000Z'), '2026-01-01T00:00:00.000Z', 1).fromDay).toBe(
      '2026-06-15',
    );
  });
});

describe('query string rules', () => {
  it('defaults: days 30, page 1, limit 20', () => {
    expect(analyticsQuerySchema.parse({})).toEqual({ days: 30 });
    expect(logsQuerySchema.parse({})).toEqual({ page: 1, limit: 20 });
  });

  it('accepts plain digits within bounds', () => {
    expect(analyticsQuerySchema.parse({ days: '1' })).toEqual({ days: 1 });
    expect(analyticsQuerySchema.parse({ days: '90' })).toEqual({ days: 90 });
    expect(logsQuerySchema.parse({ page: '9007199254740991', limit: '100' })).toEqual({
      page: 9007199254740991,
      limit: 100,
    });
  });

  it.each(['0', '91', '-1', '1.5', 'abc', '', ' 5', '1e1', '0x10', '+5'])('refuses days=%j', (days) => {
    expect(analyticsQuerySchema.safeParse({ days }).success).toBe(false);
  });

  it.each([
    { page: '0' },
    { page: '9007199254740992' },
    { page: ['1', '2'] },
    { limit: '0' },
    { limit: '101' },
    { limit: '20.0' },
  ])('refuses %j', (query) => {
    const result = logsQuerySchema.safeParse(query);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/^(page|limit) must be an integer/);
  });
});
