import type { DomainRecord } from '@tern/contracts';
import { describe, expect, it } from 'vitest';
import { applyCheck, type CheckedDomain, DEFAULT_CHECK_SCHEDULE, type RecordCheck } from '../src/index.js';

/** The rule of SPEC §20, given a domain and what the DNS says → its next state. */
const HOUR = 3_600_000;
const T0 = new Date('2026-06-15T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

const record = (
  purpose: DomainRecord['purpose'],
  status: DomainRecord['status'] = 'pending',
): DomainRecord => ({
  purpose,
  type: purpose === 'return_path_mx' ? 'MX' : 'TXT',
  name: `${purpose}.example.test`,
  value: 'v',
  status,
});
const given = (
  status: CheckedDomain['status'],
  recordStatus: DomainRecord['status'] = 'pending',
): CheckedDomain => ({
  status,
  records: [
    record('dkim', recordStatus),
    record('return_path_mx', recordStatus),
    record('return_path_spf', recordStatus),
    record('dmarc'),
  ],
  pendingSince: T0,
  verifiedAt: status === 'verified' ? T0 : null,
});
const ok: RecordCheck = { status: 'verified' };
const missing: RecordCheck = { status: 'pending' };
const other: RecordCheck = { status: 'failed', found: 'x' };
const down: RecordCheck = { status: 'unknown', error: 'ETIMEOUT' };

describe('applyCheck', () => {
  it('pending + every required record matches → verified now, checked again in a day, domain.verified', () => {
    const out = applyCheck(given('pending'), [ok, ok, ok, missing], at(HOUR), { manual: false });
    expect(out).toMatchObject({
      status: 'verified',
      reason: null,
      verifiedAt: at(HOUR),
      event: 'domain.verified',
    });
    expect(out.nextCheckAt).toEqual(at(HOUR + DEFAULT_CHECK_SCHEDULE.verifiedIntervalMs));
  });

  it('DMARC alone never decides: missing or present, the domain follows DKIM and the return path', () => {
    expect(applyCheck(given('pending'), [ok, ok, ok, ok], at(0), { manual: false }).status).toBe('verified');
    expect(applyCheck(given('pending'), [missing, ok, ok, ok], at(0), { manual: false }).status).toBe(
      'pending',
    );
  });

  it('verified stays verified on a matching re-check, with its first verifiedAt and no event', () => {
    const out = applyCheck(given('verified', 'verified'), [ok, ok, ok, missing], at(24 * HOUR), {
      manual: false,
    });
    expect(out).toMatchObject({ status: 'verified', verifiedAt: T0, event: null });
  });

  it('verified + DKIM gone or changed → failed, not polled, domain.failed, the record named', () => {
    for (const dkim of [missing, other]) {
      const out = applyCheck(given('verified', 'verified'), [dkim, ok, ok, ok], at(24 * HOUR), {
        manual: false,
      });
      expect(out).toMatchObject({ status: 'failed', nextCheckAt: null, event: 'domain.failed' });
      expect(out.reason).toBe(`${dkim === missing ? 'not found' : 'another value'}: dkim.example.test (TXT)`);
    }
  });

  it('pending with backoff: a quarter of the time pending, 1 min to 1 h, the last check at 72 h, then failed', () => {
    expect(applyCheck(given('pending'), [missing, ok, ok, ok], at(0), { manual: false }).nextCheckAt).toEqual(
      at(60_000),
    );
    expect(
      applyCheck(given('pending'), [missing, ok, ok, ok], at(HOUR), { manual: false }).nextCheckAt,
    ).toEqual(at(HOUR + HOUR / 4));
    expect(
      applyCheck(given('pending'), [missing, ok, ok, ok], at(10 * HOUR), { manual: false }).nextCheckAt,
    ).toEqual(at(11 * HOUR));
    expect(
      applyCheck(given('pending'), [missing, ok, ok, ok], at(71.5 * HOUR), { manual: false }).nextCheckAt,
    ).toEqual(at(72 * HOUR));
    const out = applyCheck(given('pending'), [missing, ok, ok, ok], at(72 * HOUR), { manual: false });
    expect(out).toMatchObject({ status: 'failed', nextCheckAt: null, event: 'domain.failed' });
    expect(out.reason).toBe('not verified within 72 h — not found: dkim.example.test (TXT)');
  });

  it('a resolver that does not answer changes no status either way and asks again in 5 minutes', () => {
    const verified = applyCheck(given('verified', 'verified'), [down, ok, ok, ok], at(HOUR), {
      manual: false,
    });
    expect(verified).toMatchObject({ status: 'verified', event: null, nextCheckAt: at(HOUR + 5 * 60_000) });
    expect(verified.records[0]!.status).toBe('verified');
    expect(verified.reason).toBe('DNS did not answer for: dkim.example.test (TXT)');
    const late = applyCheck(given('pending'), [down, ok, ok, ok], at(80 * HOUR), { manual: false });
    expect(late).toMatchObject({ status: 'pending', event: null });
  });

  it('failed: the poller leaves it; verify-now reopens it pending for a new window, or verifies it', () => {
    expect(
      applyCheck(given('failed'), [missing, ok, ok, ok], at(100 * HOUR), { manual: false }),
    ).toMatchObject({
      status: 'failed',
      nextCheckAt: null,
      event: null,
    });
    const reopened = applyCheck(given('failed'), [missing, ok, ok, ok], at(100 * HOUR), { manual: true });
    expect(reopened).toMatchObject({ status: 'pending', pendingSince: at(100 * HOUR), event: null });
    expect(
      applyCheck(given('failed'), [ok, ok, ok, missing], at(100 * HOUR), { manual: true }),
    ).toMatchObject({
      status: 'verified',
      event: 'domain.verified',
    });
  });
});
