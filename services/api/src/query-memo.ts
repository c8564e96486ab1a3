import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { LRUCache } from 'lru-cache';

/** Longest querystring (its parsed keys and values together) whose validation is remembered. */
const MAX_KEY_LENGTH = 2048;

/**
 * The zod validator compiler of every route, remembering, per route, the validated querystring of
 * the last `max` distinct querystrings (issue 29). A repeated read — a program polling page 1, a
 * dashboard's reload — asks the same query again and again; zod parsing it anew cost about as much
 * as the rest of the memoised logs route. The querystring schemas are pure functions of their
 * input (no clock, no I/O), so the answer for equal input is the one already computed: errors are
 * not remembered (they are rare and cheap to recompute), and the remembered value is frozen, so a
 * handler that would change `request.query` fails loudly instead of changing the next request's.
 * Input with anything but string values (a repeated key parses to an array) is validated anew.
 */
type Validated = { error?: Error | FastifySchemaValidationError[]; value?: unknown };

export function queryMemoValidatorCompiler<S>(max = 1000): FastifySchemaCompiler<S> {
  return (route) => {
    const validate = validatorCompiler(route as never) as (data: unknown) => Validated;
    if (route.httpPart !== 'querystring') return validate;
    const known = new LRUCache<string, Validated>({ max });
    return (data: unknown): Validated => {
      const key = queryKey(data);
      if (key === null) return validate(data);
      const hit = known.get(key);
      if (hit !== undefined) return hit;
      const result = validate(data);
      if (result.error === undefined) {
        const remembered = { value: Object.freeze(result.value) };
        known.set(key, remembered);
        return remembered;
      }
      return result;
    };
  };
}

/** Keys and values in order, or null when a value is not a string or the whole is long. */
function queryKey(data: unknown): string | null {
  if (typeof data !== 'object' || data === null) return null;
  let key = '';
  for (const name in data) {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value !== 'string') return null;
    key += `${name}\u0000${value}\u0001`;
    if (key.length > MAX_KEY_LENGTH) return null;
  }
  return key;
}
