import { unstorableText } from '@tern/contracts';
import { httpError } from '@tern/http';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Only what a parser built is walked: plain objects and arrays (never a stream, e.g. a CSV body). */
const isPlain = (value: object): boolean => {
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/**
 * The first string of `value` (keys included) that no store can hold — U+0000 or a lone UTF-16
 * surrogate — as `path: problem`, or null. Iterative, so a body nested thousands deep costs no stack.
 */
export function firstUnstorable(value: unknown, root: string): string | null {
  const stack: [unknown, string][] = [[value, root]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = unstorableText(item);
      if (problem) return `${path}: ${problem}`;
    } else if (item !== null && typeof item === 'object' && isPlain(item)) {
      if (Array.isArray(item)) {
        for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}.${i}`]);
      } else {
        for (const key of Object.keys(item)) {
          const keyProblem = unstorableText(key);
          if (keyProblem) return `${path}: a key ${keyProblem}`;
          stack.push([(item as Record<string, unknown>)[key], `${path}.${key}`]);
        }
      }
    }
  }
  return null;
}

/**
 * `preHandler` hook of the query API (issue 24, item 4): a path parameter, query value or JSON
 * body holding U+0000 or a lone surrogate → 400 `INVALID_CHARACTERS` naming the field, after the
 * route's own schema (its message comes first) and before any handler or store sees it. Without
 * it such a value escaped as a ZodError of the event being built,
 * or as 22P02/22P05 of Postgres deep in the send path — a 500 for a client's mistake.
 */
export function refuseUnstorableInput(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (error?: Error) => void,
): void {
  const problem =
    firstUnstorable(request.params, 'params') ??
    firstUnstorable(request.query, 'querystring') ??
    firstUnstorable(request.body, 'body');
  // A callback hook: no promise per request (issue 45 item 5).
  done(problem === null ? undefined : httpError(400, problem, { code: 'INVALID_CHARACTERS' }));
}
