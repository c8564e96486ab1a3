import { describe, expect, it } from 'vitest';
import { diffContributions, foldBatch, foldEmail, groupByEmail } from '../src/index.js';
import { delivered, opened, queued, sent } from './events.js';

const T0 = '2024-05-01T10:00:00.000Z';
const T1 = '2024-05-01T10:01:00.000Z';
const T2 = '2024-05-01T10:02:00.000Z';

describe('foldBatch', () => {
  const a = { emailId: 'a' };
  const b = { emailId: 'b' };
  const other = { tenantId: 'tenant-0', emailId: 'z' };
  const batch = [
    queued('e1', T0, {}, b),
    queued('e2', T0, {}, a),
    sent('e3', T1, 'ses', 'm', b),
    queued('e4', T0, {}, other),
    delivered('e5', T2, b),
  ];

  it('groups by email in (tenant, email) order, each group in log order', () => {
    const groups = groupByEmail(batch);
    expect(groups.map((g) => [g.tenantId, g.emailId])).toEqual([
      ['tenant-0', 'z'],
      ['tenant-1', 'a'],
      ['tenant-1', 'b'],
    ]);
    expect(groups[2]!.events.map((e) => e.id)).toEqual(['e1', 'e3', 'e5']);
  });

  it('folds each email from its stored state and sums the rollup deltas of the changes', () => {
    const stored = foldEmail([queued('e0', T0, {}, a)]);
    const folded = foldBatch(
      groupByEmail([opened('e6', T2)].map((e) => ({ ...e, emailId: 'a' }))),
      (_t, id) => (id === 'a' ? stored : null),
    );
    expect(folded.emails).toHaveLength(1);
    const [email] = folded.emails;
    expect(email!.before).toBe(stored);
    expect(email!.after.openCount).toBe(1);
    expect(folded.deltas).toEqual(diffContributions(stored, email!.after));
  });

  it('the batch folded in one go equals each email folded alone (null before)', () => {
    const folded = foldBatch(groupByEmail(batch), () => null);
    for (const { tenantId, emailId, after, before } of folded.emails) {
      expect(before).toBeNull();
      expect(after).toEqual(foldEmail(batch.filter((e) => e.tenantId === tenantId && e.emailId === emailId)));
    }
    expect(folded.deltas.reduce((n, d) => n + d.counters.total, 0)).toBe(3);
    expect(folded.deltas.reduce((n, d) => n + d.counters.sent, 0)).toBe(1);
  });
});
