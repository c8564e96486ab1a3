import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRouteBodySchema, firstMatch, type InboundRoute, matches } from '../src/routes.js';

const route = (
  id: string,
  priority: number,
  recipient: string,
  extra: Partial<InboundRoute['match']> = {},
): InboundRoute => ({
  id,
  priority,
  match: { recipient, ...extra },
  actions: [{ store: true }],
  createdAt: `2026-01-01T00:00:0${id.length % 10}.000Z`,
});

describe('route matching (SPEC §24)', () => {
  it('exact (any case), *@domain and /regex/', () => {
    expect(matches('Support@Acme.test', 'support@acme.test')).toBe(true);
    expect(matches('support@acme.test', 'sales@acme.test')).toBe(false);
    expect(matches('*@acme.test', 'x@acme.test')).toBe(true);
    expect(matches('*@acme.test', 'x@notacme.test')).toBe(false);
    expect(matches('/^inv-\\d+@/', 'INV-42@acme.test')).toBe(true);
    expect(matches('/^inv-\\d+@/', 'inv-x@acme.test')).toBe(false);
  });

  it('the first match by priority acts; from and subject narrow it', () => {
    const routes = [
      route('catchall', 100, '*@acme.test'),
      route('billing', 10, 'billing@acme.test', { from: '*@bank.test' }),
      route('urgent', 5, '*@acme.test', { subject: '/urgent/' }),
    ];
    const pick = (to: string, from: string, subject: string) =>
      firstMatch(routes, { recipients: [to], from, subject })?.id ?? null;
    expect(pick('billing@acme.test', 'x@bank.test', 'statement')).toBe('billing');
    expect(pick('billing@acme.test', 'x@other.test', 'statement')).toBe('catchall');
    expect(pick('billing@acme.test', 'x@bank.test', 'URGENT: pay')).toBe('urgent');
    expect(pick('x@elsewhere.test', 'x@bank.test', 'urgent')).toBeNull();
  });

  it('the order routes are listed in never changes which one acts', () => {
    const routes = [
      route('a', 3, '*@acme.test'),
      route('bb', 1, '/^s/'),
      route('ccc', 2, 'support@acme.test'),
    ];
    fc.assert(
      fc.property(fc.shuffledSubarray(routes, { minLength: 3, maxLength: 3 }), (shuffled) => {
        expect(
          firstMatch(shuffled, { recipients: ['support@acme.test'], from: 'a@b.test', subject: null })?.id,
        ).toBe('bb');
      }),
    );
  });

  it.each([
    ['a bad regex', { recipient: '/(/' }, [{ store: true }], false],
    ['no action', { recipient: '*@a.test' }, [], false],
    ['an unknown action', { recipient: '*@a.test' }, [{ bounce: true }], false],
    [
      'a webhook and a forward',
      { recipient: '*@a.test' },
      [{ webhook: 'we_1' }, { forward: 'ops@a.test' }],
      true,
    ],
  ])('a body with %s: accepted %s', (_what, match, actions, accepted) => {
    expect(createRouteBodySchema.safeParse({ match, priority: 1, actions }).success).toBe(accepted);
  });
});
