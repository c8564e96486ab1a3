import { describe, expect, it } from 'vitest';
import { classifyStoreError } from '../src/errors.js';

describe('classifyStoreError', () => {
  it.each([
    // A store that cannot be reached or cannot serve now: retry later.
    [{ code: 'ECONNREFUSED' }, 'unavailable'],
    [{ code: '08006' }, 'unavailable'],
    [{ code: '57P01' }, 'unavailable'],
    [{ code: '40001' }, 'unavailable'],
    [{ code: '53300' }, 'unavailable'],
    [{ code: '209', message: 'Timeout exceeded' }, 'unavailable'],
    [new Error('Connection terminated unexpectedly'), 'unavailable'],
    [new Error('Client has encountered a connection error and is not queryable'), 'unavailable'],
    [Object.assign(new Error('wrapped'), { cause: { code: 'ECONNRESET' } }), 'unavailable'],
    [Object.assign(new Error('log down'), { name: 'EventLogUnavailableError' }), 'unavailable'],
    // The store refused the data: a retry can never succeed.
    [{ code: '22021' }, 'data'],
    [{ code: '22P05' }, 'data'],
    [{ code: '23505' }, 'data'],
    [{ code: '27', message: 'Cannot parse input' }, 'data'],
    [new Error('Code: 53. DB::Exception: TYPE_MISMATCH'), 'data'],
    // Anything else is a bug.
    [{ code: '42601', message: 'syntax error' }, 'bug'],
    [new TypeError('x is undefined'), 'bug'],
    [undefined, 'bug'],
    [null, 'bug'],
  ])('%o → %s', (error, expected) => {
    expect(classifyStoreError(error)).toBe(expected);
  });
});
