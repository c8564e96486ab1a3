import { describe, expect, it } from 'vitest';
import { ERASED_TEXT, erasedValueOf, personalFieldsOf } from '../src/index.js';

describe('what a personal field reads once its key is erased (SPEC §14, §22)', () => {
  it("email.queued's recipient and subject read null", () => {
    expect(erasedValueOf('email.queued', 'toEmail')).toBeNull();
    expect(erasedValueOf('email.queued', 'subject')).toBeNull();
  });

  it('a required field of another type reads [erased]: the timeline stays valid', () => {
    expect(ERASED_TEXT).toBe('[erased]');
    expect(erasedValueOf('email.clicked', 'url')).toBe('[erased]');
    expect(erasedValueOf('email.failed', 'reason')).toBe('[erased]');
  });

  it('an optional field is left out; an unknown type or field too', () => {
    expect(erasedValueOf('email.bounced', 'diagnostic')).toBeUndefined();
    expect(erasedValueOf('email.clicked', 'userAgent')).toBeUndefined();
    expect(erasedValueOf('email.bounced', 'recipient')).toBeUndefined();
    expect(erasedValueOf('email.unknown', 'url')).toBeUndefined();
    expect(erasedValueOf('email.clicked', 'nope')).toBeUndefined();
  });

  it('the personal fields of a type; none for a type that is no delivery event', () => {
    expect(personalFieldsOf('email.queued')).toEqual(['toEmail', 'subject']);
    expect(personalFieldsOf('email.bounced')).toEqual(['reason', 'diagnostic', 'recipient']);
    expect(personalFieldsOf('email.unknown')).toEqual([]);
    expect(personalFieldsOf('toString')).toEqual([]);
  });
});
