/** A store function `f(pool, …args)` as a repository method `(…args)`: the pool bound. */
export type PoolBound<F> = F extends (db: never, ...args: infer A) => infer R ? (...args: A) => R : never;

/** The repository `bindPool` makes of `F`, the owner's statements: each with the pool bound. */
export type Repository<F> = { [K in keyof F]: PoolBound<F[K]> };

/**
 * A repository over one pool (issue 25, item 4): each of `fns`, the owner's plain store functions,
 * with `pool` bound as its first argument. It holds no SQL of its own; the functions stay exported
 * for callers that bring their own client (a transaction, a test).
 */
export function bindPool<P, F extends Record<string, (db: P, ...args: never[]) => unknown>>(
  pool: P,
  fns: F,
): Repository<F> {
  const bound: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(fns))
    bound[name] = (...args: unknown[]) => (fn as (db: P, ...rest: unknown[]) => unknown)(pool, ...args);
  return bound as Repository<F>;
}
