import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { logsQuerySchema } from './logs/schemas.js';
import { queryMemoValidatorCompiler } from './query-memo.js';

type Result = { value?: Record<string, unknown>; error?: unknown };

describe('the querystring validation memo', () => {
  it('validates a repeated querystring once and answers the same value', () => {
    let runs = 0;
    const schema = z.object({
      page: z.string().transform((s) => {
        runs++;
        return Number(s);
      }),
    });
    const validate = queryMemoValidatorCompiler()({
      schema,
      httpPart: 'querystring',
      method: 'GET',
      url: '/x',
    });
    const first = validate({ page: '2' }) as Result;
    const second = validate({ page: '2' }) as Result;
    expect(first.value).toEqual({ page: 2 });
    expect(second.value).toBe(first.value);
    expect(runs).toBe(1);
    expect((validate({ page: '3' }) as Result).value).toEqual({ page: 3 });
    expect(runs).toBe(2);
    // Frozen: a handler cannot change what the next request with this querystring gets.
    expect(Object.isFrozen(first.value)).toBe(true);
  });

  it('never remembers a refusal, nor input with repeated keys; other parts are not memoised', () => {
    const validate = queryMemoValidatorCompiler()({
      schema: logsQuerySchema,
      httpPart: 'querystring',
      method: 'GET',
      url: '/emails/logs',
    });
    const bad = validate({ limit: '500' }) as Result;
    expect(bad.error).toBeDefined();
    expect((validate({ limit: '500' }) as Result).error).toBeDefined();
    expect((validate({ status: ['sent', 'bounced'] }) as Result).error).toBeDefined();
    expect((validate({ status: 'bounced', limit: '5' }) as Result).value).toMatchObject({
      status: 'BOUNCED',
      limit: 5,
      page: 1,
    });
    const body = queryMemoValidatorCompiler()({
      schema: z.object({ a: z.string() }),
      httpPart: 'body',
      method: 'POST',
      url: '/y',
    });
    const one = body({ a: 'x' }) as Result;
    expect(body({ a: 'x' }) as Result).not.toBe(one);
  });
});
